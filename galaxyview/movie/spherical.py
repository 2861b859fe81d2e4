"""360 and stereo video metadata (github.com/google/spatial-media), which YouTube and players
read: the Spherical Video V1 XML in a `uuid` box of the mp4's video track, and the Spherical
Video V2 `st3d` box (the frame's stereo layout) in the video track's sample entry
(moov/trak/mdia/minf/stbl/stsd/avc1). ffmpeg writes neither, so they are added after the encoder
has closed the file: the `moov` box is rebuilt with the new boxes and, where `moov` comes before
the media data (ffmpeg's +faststart), the chunk offsets (`stco`, `co64`) move by the bytes
added. The file is rewritten beside itself and renamed into place.
"""
from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

from galaxyview.errors import GalaxyviewError
from galaxyview.files import open_temp, remove_quietly

SPHERICAL_UUID = bytes.fromhex("ffcc8263f8554a938814587a02521fdd")
CONTAINERS = {b"moov", b"trak", b"mdia", b"minf", b"stbl"}
STEREO_MODES = ("mono", "top-bottom", "left-right")  # V1 StereoMode; V2 st3d's stereo_mode: index
STSD_HEADER = 8  # stsd: version and flags, entry count; then the sample entries
VISUAL_ENTRY_HEADER = 78  # a VisualSampleEntry's fields before its child boxes (avcC, st3d, ...)
TRAILING = {b"clap", b"pasp", b"btrt"}  # optional boxes that end a sample entry: st3d goes before


class MetadataError(GalaxyviewError):
    """The 360 or stereo metadata could not be added to the movie."""


def st3d_box(stereo: str) -> bytes:
    """The V2 Stereoscopic 3D box: a FullBox (version 0, flags 0) and one byte, stereo_mode
    (0 mono, 1 top-bottom: left eye on top, 2 left-right: left eye on the left)."""
    if stereo not in STEREO_MODES:
        raise ValueError(f"stereo mode must be one of {STEREO_MODES}, got {stereo!r}")
    return _box(b"st3d", struct.pack(">IB", 0, STEREO_MODES.index(stereo)))


def spherical_xml(stereo: str = "mono") -> bytes:
    """The Spherical Video V1 XML for an equirectangular movie (`stereo`: STEREO_MODES)."""
    if stereo not in STEREO_MODES:
        raise ValueError(f"stereo mode must be one of {STEREO_MODES}, got {stereo!r}")
    mode = "" if stereo == "mono" else f"<GSpherical:StereoMode>{stereo}</GSpherical:StereoMode>"
    return ('<?xml version="1.0"?><rdf:SphericalVideo '
            'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
            'xmlns:GSpherical="http://ns.google.com/videos/1.0/spherical/">'
            "<GSpherical:Spherical>true</GSpherical:Spherical>"
            "<GSpherical:Stitched>true</GSpherical:Stitched>"
            "<GSpherical:StitchingSoftware>galaxyview</GSpherical:StitchingSoftware>"
            "<GSpherical:ProjectionType>equirectangular</GSpherical:ProjectionType>"
            f"{mode}</rdf:SphericalVideo>").encode()


def boxes(data: bytes, start: int = 0, end: int | None = None):
    """(type, header size, start, end) of each box in data[start:end]."""
    end = len(data) if end is None else end
    at = start
    while at + 8 <= end:
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        header = 8
        if size == 1:
            size, header = struct.unpack(">Q", data[at + 8:at + 16])[0], 16
        elif size == 0:
            size = end - at
        if size < header or at + size > end:
            raise MetadataError(f"damaged mp4 box {kind!r} at byte {at}")
        yield kind, header, at, at + size
        at += size


def _top_level(f) -> list[tuple[bytes, int, int]]:
    """(type, start, end) of the file's top-level boxes, reading only their headers."""
    found, at, total = [], 0, os.fstat(f.fileno()).st_size
    while at + 8 <= total:
        f.seek(at)
        size, kind = struct.unpack(">I4s", f.read(8))
        if size == 1:
            size = struct.unpack(">Q", f.read(8))[0]
        elif size == 0:
            size = total - at
        if size < 8 or at + size > total:
            raise MetadataError(f"damaged mp4 box {kind!r} at byte {at}")
        found.append((kind, at, at + size))
        at += size
    return found


def _box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def _is_video(trak: bytes) -> bool:
    """Whether a trak box (its bytes, header included) holds a video track."""
    (_, top, _, end), = boxes(trak)
    for kind, header, s, e in boxes(trak, top, end):
        if kind == b"mdia":
            for k2, h2, s2, e2 in boxes(trak, s + header, e):
                if k2 == b"hdlr":
                    return trak[s2 + h2 + 8:s2 + h2 + 12] == b"vide"
    return False


def _rebuild(data: bytes, start: int, end: int, trak: bytes, entry: bytes, shift: int,
             in_video: bool = False) -> bytes:
    """The boxes of data[start:end] again, `trak` appended to the video trak's boxes and `entry`
    to its first sample entry's, chunk offsets moved by `shift`."""
    out = []
    for kind, header, s, e in boxes(data, start, end):
        if kind in CONTAINERS:
            video = in_video or (kind == b"trak" and _is_video(data[s:e]))
            inner = _rebuild(data, s + header, e, trak, entry, shift, video)
            if kind == b"trak" and video:
                inner += trak
            out.append(_box(kind, inner))
        elif kind == b"stsd" and in_video and entry:
            first = s + header + STSD_HEADER
            found = next(boxes(data, first, e), None)
            if found is None:
                raise MetadataError("the video track has no sample entry")
            k2, h2, s2, e2 = found
            sample = data[s2:s2 + h2 + VISUAL_ENTRY_HEADER]
            if len(sample) != h2 + VISUAL_ENTRY_HEADER:
                raise MetadataError(f"damaged video sample entry {k2!r}")
            first_child = s2 + h2 + VISUAL_ENTRY_HEADER
            at = next((s3 for k3, _, s3, _ in boxes(data, first_child, e2) if k3 in TRAILING), e2)
            children = data[first_child:at] + entry + data[at:e2]
            out.append(_box(kind, data[s + header:first] + _box(k2, sample[h2:] + children)
                            + data[e2:e]))
        elif kind in (b"stco", b"co64") and shift:
            body = bytearray(data[s + header:e])
            count = struct.unpack(">I", body[4:8])[0]
            fmt = ">I" if kind == b"stco" else ">Q"
            width = struct.calcsize(fmt)
            for i in range(count):
                at = 8 + i * width
                (offset,) = struct.unpack(fmt, body[at:at + width])
                if kind == b"stco" and offset + shift >= 2 ** 32:
                    raise MetadataError("the movie is too large for 32-bit chunk offsets")
                body[at:at + width] = struct.pack(fmt, offset + shift)
            out.append(data[s:s + header] + bytes(body))
        else:
            out.append(data[s:e])
    return b"".join(out)


def add_spherical_metadata(path, stereo: str = "mono") -> None:
    """Mark the mp4 at `path` as a 360 equirectangular movie (Spherical Video V1); a stereo one
    (`stereo` top-bottom or left-right) also gets the V2 st3d box."""
    _add(path, spherical_xml(stereo), stereo)


def add_stereo_metadata(path, stereo: str) -> None:
    """Mark the flat mp4 at `path` as stereo 3D, `stereo` top-bottom or left-right (V2 st3d)."""
    if stereo == "mono":
        raise ValueError("a stereo movie's layout is top-bottom or left-right")
    _add(path, None, stereo)


def _add(path, xml: bytes | None, stereo: str) -> None:
    """Add the V1 XML (`xml`, unless None) and, for stereo, the st3d box; a movie already
    carrying them is left as it is."""
    path = Path(path)
    with open(path, "rb") as f:
        top = _top_level(f)
        moov = next(((s, e) for k, s, e in top if k == b"moov"), None)
        mdat = next((s for k, s, e in top if k == b"mdat"), None)
        if moov is None:
            raise MetadataError(f"{path}: no moov box; not an mp4 movie")
        f.seek(moov[0])
        raw = f.read(moov[1] - moov[0])
        trak = b"" if xml is None else _box(b"uuid", SPHERICAL_UUID + xml)
        entry = b"" if stereo == "mono" else st3d_box(stereo)
        if trak and read_spherical_bytes(raw) is not None:
            trak = b""  # already marked
        if entry and read_stereo_bytes(raw) is not None:
            entry = b""
        if not (trak or entry):
            return
        grow = len(trak) + len(entry)
        shift = grow if mdat is not None and mdat > moov[0] else 0
        new_moov = _rebuild(raw, 0, len(raw), trak, entry, shift)
        if len(new_moov) != len(raw) + grow:
            raise MetadataError(f"{path}: no video track to mark as 360 or stereo")
        temp = None
        try:
            temp, fd = open_temp(path, ".part")
            with os.fdopen(fd, "wb") as out:
                f.seek(0)
                out.write(f.read(moov[0]))
                out.write(new_moov)
                f.seek(moov[1])
                shutil.copyfileobj(f, out, 1 << 22)
            os.replace(temp, path)
        except BaseException:
            if temp is not None:
                remove_quietly(temp)
            raise


def _video_trak(moov: bytes) -> tuple[int, int, int] | None:
    """(header, start, end) of the video trak in a moov box's bytes, or None."""
    for kind, header, s, e in boxes(moov):
        if kind == b"moov":
            for k2, h2, s2, e2 in boxes(moov, s + header, e):
                if k2 == b"trak" and _is_video(moov[s2:e2]):
                    return h2, s2, e2
    return None


def _child(data: bytes, start: int, end: int, kind: bytes):
    return next(((h, s, e) for k, h, s, e in boxes(data, start, end) if k == kind), None)


def read_stereo_bytes(moov: bytes) -> int | None:
    """The st3d stereo_mode (STEREO_MODES' index) of the video sample entry in a moov box's
    bytes, or None when it has no st3d box."""
    found = _video_trak(moov)
    for kind in (b"mdia", b"minf", b"stbl", b"stsd"):
        if found is None:
            return None
        header, s, e = found
        found = _child(moov, s + header, e, kind)
    header, s, e = found
    sample = next(boxes(moov, s + header + STSD_HEADER, e), None)
    if sample is None:
        return None
    _, h2, s2, e2 = sample
    st3d = _child(moov, s2 + h2 + VISUAL_ENTRY_HEADER, e2, b"st3d")
    if st3d is None:
        return None
    h3, s3, e3 = st3d
    return moov[s3 + h3 + 4]


def _read_moov(path, read):
    """read(moov bytes) of the mp4 at `path`, or None without a moov box."""
    with open(path, "rb") as f:
        for kind, s, e in _top_level(f):
            if kind == b"moov":
                f.seek(s)
                return read(f.read(e - s))
    return None


def read_stereo(path) -> int | None:
    """The st3d stereo_mode of the mp4 at `path` (0 mono, 1 top-bottom, 2 left-right), or None."""
    return _read_moov(path, read_stereo_bytes)


def read_spherical_bytes(moov: bytes) -> bytes | None:
    """The Spherical Video V1 XML in the video trak of a moov box's bytes, or None."""
    for kind, header, s, e in boxes(moov):
        if kind == b"moov":
            return read_spherical_bytes(moov[s + header:e])
        if kind == b"trak" and _is_video(moov[s:e]):
            for k2, h2, s2, e2 in boxes(moov, s + header, e):
                if k2 == b"uuid" and moov[s2 + h2:s2 + h2 + 16] == SPHERICAL_UUID:
                    return moov[s2 + h2 + 16:e2]
    return None


def read_spherical(path) -> bytes | None:
    """The Spherical Video V1 XML of the mp4 at `path`, or None."""
    return _read_moov(path, read_spherical_bytes)
