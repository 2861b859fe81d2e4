"""`galaxyview record --projection` on the CPU engine: dome masters as numbered PNG frames, 360
movies with their metadata (movie/spherical.py), stereo, sizes up to 8K."""
import re
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from galaxyview.cli import record
from galaxyview.movie.encoder import MovieWriter
from galaxyview.movie.frames import FrameWriter
from galaxyview.movie.spherical import (MetadataError, add_spherical_metadata,
                                        add_stereo_metadata, boxes, read_spherical)
from test_record import SCENE, parse, read_movie, run_cli

FIXED = [*SCENE, "--steps-per-frame", "2"]  # the collapse's start, not its story's end
GS = "{http://ns.google.com/videos/1.0/spherical/}"


def spherical(path):
    """The movie's Spherical Video V1 fields, parsed as XML (None: no metadata)."""
    xml = read_spherical(path)
    if xml is None:
        return None
    root = ET.fromstring(xml)  # well-formed, or this raises
    assert root.tag == "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}SphericalVideo"
    return {child.tag.removeprefix(GS): child.text for child in root}


def st3d(path):
    """The payload of the st3d box among the video sample entry's children
    (moov/trak/mdia/minf/stbl/stsd/avc1), walked here by hand; None: no st3d there."""
    data = path.read_bytes()

    def child(start, end, kind):
        found = [(h, s, e) for k, h, s, e in boxes(data, start, end) if k == kind]
        return found

    (h, s, e), = child(0, len(data), b"moov")
    for trak in child(s + h, e, b"trak"):
        h, s, e = trak
        (h, s, e), = child(s + h, e, b"mdia")
        (hh, hs, _), = child(s + h, e, b"hdlr")
        if data[hs + hh + 8:hs + hh + 12] != b"vide":
            continue
        for kind in (b"minf", b"stbl", b"stsd"):
            (h, s, e), = child(s + h, e, kind)
        assert data[s + h + 4:s + h + 8] == b"\0\0\0\1"  # stsd: one sample entry
        (kind, h, s, e), = boxes(data, s + h + 8, e)
        assert kind == b"avc1"
        kinds = [k for k, *_ in boxes(data, s + h + 78, e)]  # after the entry's fields
        assert kinds[0] == b"avcC" and kinds.count(b"st3d") <= 1
        if b"st3d" in kinds:  # before the optional boxes at the end (btrt, pasp)
            assert not {b"btrt", b"pasp", b"clap"} & set(kinds[:kinds.index(b"st3d")])
            (h, s, e), = child(s + h + 78, e, b"st3d")
            return data[s + h:e]
    return None


def ffmpeg_stereo(path) -> str | None:
    """The stereo 3D side data `ffmpeg -i` prints for the movie, or None."""
    import imageio_ffmpeg

    out = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
                         capture_output=True, text=True, timeout=120).stderr
    found = re.search(r"stereo ?3d: ([a-z ]+)", out, re.IGNORECASE)
    return found.group(1).strip() if found else None


def test_dome_master_as_numbered_png_frames(tmp_path, capsys):
    out = tmp_path / "dome" / "%05d.png"  # the folder is made
    code = run_cli([*FIXED, "-o", str(out), "--frames", "3", "--size", "128x128",
                    "--projection", "fisheye", "--fov", "200", "--tilt", "60",
                    ])
    assert code == 0, capsys.readouterr().err
    names = sorted(p.name for p in (tmp_path / "dome").iterdir())
    assert names == ["00000.png", "00001.png", "00002.png"]
    frames = [np.asarray(Image.open(tmp_path / "dome" / n)) for n in names]
    assert all(f.shape == (128, 128, 3) for f in frames)
    yy, xx = np.mgrid[:128, :128]
    r = np.hypot(xx + 0.5 - 64, yy + 0.5 - 64)
    outside, inside = r > 64 + 1, r < 64 - 1  # beyond the dome's circle, within it
    for f in frames:
        lit = f.max(axis=-1) > 40
        assert lit.mean() > 0.01 and not lit[outside].any()
        assert f[outside].max() == 0  # black beyond the circle
        assert f[inside].min(axis=0)[2] > 0  # the background's blue within it
    assert not np.array_equal(frames[0], frames[2])
    # existing frames are refused before any work, then replaced with --overwrite
    assert run_cli([*FIXED, "--png-dir", str(tmp_path / "dome"), "--frames", "2",
                    "--size", "128x128"]) == 2
    assert "00000.png already exists" in capsys.readouterr().err
    assert run_cli([*FIXED, "--png-dir", str(tmp_path / "dome"), "--frames", "2",
                    "--size", "128x128", "--overwrite"]) == 0
    assert not np.array_equal(np.asarray(Image.open(tmp_path / "dome" / "00000.png")),
                              frames[0])  # a perspective frame now
    assert not [p for p in (tmp_path / "dome").iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("projection, stereo", [("equirect", None), ("ods", "top-bottom")])
def test_360_movies_carry_spherical_metadata(tmp_path, capsys, projection, stereo):
    out = tmp_path / f"{projection}.mp4"
    code = run_cli([*FIXED, "-o", str(out), "--frames", "4", "--size", "192x96",
                    "--projection", projection, "--eye-sep", "0.05"])
    assert code == 0, capsys.readouterr().err
    fields = spherical(out)
    assert fields["Spherical"] == "true" and fields["ProjectionType"] == "equirectangular"
    assert fields.get("StereoMode") == stereo
    assert st3d(out) == (None if stereo is None else b"\0\0\0\0\1")  # V2: top-bottom
    meta, frames = read_movie(out)  # the chunk offsets moved with the new box: it decodes
    assert meta["size"] == (192, 96) and len(frames) == 4
    assert all((f.max(axis=-1) > 40).mean() > 0.01 for f in frames)
    flat = tmp_path / "flat.mp4"
    assert run_cli([*FIXED, "-o", str(flat), "--frames", "2", "--size", "96x64"]) == 0
    assert spherical(flat) is None and st3d(flat) is None
    assert ffmpeg_stereo(flat) is None


@pytest.mark.parametrize("projection, mode, said", [("stereo-sbs", 2, "side by side"),
                                                    ("stereo-tb", 1, "top and bottom")])
def test_flat_stereo_movies_carry_st3d(tmp_path, capsys, projection, mode, said):
    out = tmp_path / f"{projection}.mp4"
    code = run_cli([*FIXED, "-o", str(out), "--frames", "3", "--size", "128x96",
                    "--projection", projection])
    assert code == 0, capsys.readouterr().err
    assert st3d(out) == bytes([0, 0, 0, 0, mode])  # version 0, flags 0, stereo_mode
    assert spherical(out) is None  # not 360
    meta, frames = read_movie(out)  # the chunk offsets moved with the new box: it decodes
    assert meta["size"] == (128, 96) and len(frames) == 3
    assert all((f.max(axis=-1) > 40).mean() > 0.01 for f in frames)
    assert ffmpeg_stereo(out) == said  # ffmpeg reads the box as the stream's stereo 3D


def test_stereo_pair_halves_show_the_same_scene(tmp_path, capsys):
    out = tmp_path / "sbs.mp4"
    code = run_cli([*FIXED, "-o", str(out), "--frames", "2", "--size", "256x96",
                    "--projection", "stereo-sbs"])
    assert code == 0, capsys.readouterr().err
    _, frames = read_movie(out)
    left, right = frames[0][:, :128].astype(int), frames[0][:, 128:].astype(int)
    assert (left.max(axis=-1) > 40).mean() > 0.01
    assert abs(left.mean() - right.mean()) < 0.2 * left.mean()  # one scene, two eyes
    assert not np.array_equal(left, right)  # seen from two places
    assert spherical(out) is None


def test_metadata_box_keeps_the_frames_and_is_added_once(tmp_path):
    path = tmp_path / "m.mp4"
    with MovieWriter(path, 30, (64, 32)) as w:
        for i in range(5):
            w.add_frame(np.full((32, 64, 3), 40 * i, np.uint8))
    _, before = read_movie(path)
    add_spherical_metadata(path)
    size = path.stat().st_size
    add_spherical_metadata(path)  # already marked: unchanged
    assert path.stat().st_size == size
    data = path.read_bytes()
    kinds = [k for k, *_ in boxes(data)]
    assert kinds.index(b"moov") < kinds.index(b"mdat")  # +faststart: offsets had to move
    _, after = read_movie(path)
    assert len(after) == 5 and all(np.array_equal(a, b) for a, b in zip(before, after))
    assert spherical(path) == {"Spherical": "true", "Stitched": "true",
                               "StitchingSoftware": "galaxyview",
                               "ProjectionType": "equirectangular"}
    assert st3d(path) is None  # mono 360
    add_stereo_metadata(path, "left-right")
    size = path.stat().st_size
    add_stereo_metadata(path, "left-right")
    add_spherical_metadata(path, "left-right")  # both there already: unchanged
    assert path.stat().st_size == size and st3d(path) == b"\0\0\0\0\2"
    _, after = read_movie(path)
    assert len(after) == 5 and all(np.array_equal(a, b) for a, b in zip(before, after))
    with pytest.raises(ValueError, match="top-bottom or left-right"):
        add_stereo_metadata(path, "mono")
    empty = tmp_path / "empty.mp4"  # a video track whose stsd lists no sample entry

    def box(kind, *inner):
        return (8 + sum(map(len, inner))).to_bytes(4, "big") + kind + b"".join(inner)

    hdlr = box(b"hdlr", bytes(8), b"vide", bytes(12), b"\0")
    stbl = box(b"stbl", box(b"stsd", bytes(8)))
    empty.write_bytes(box(b"ftyp", b"isom", bytes(4))
                      + box(b"moov", box(b"trak", box(b"mdia", hdlr, box(b"minf", stbl)))))
    with pytest.raises(MetadataError, match="no sample entry"):
        add_stereo_metadata(empty, "top-bottom")
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00\x00\x00\x10ftypisom\x00\x00\x00\x00")
    with pytest.raises(MetadataError, match="no moov"):
        add_spherical_metadata(junk)


def test_projection_arguments_and_sizes(tmp_path, capsys):
    args = parse([*FIXED, "-o", "a.mp4", "--size", "7680x3840", "--projection", "equirect"])
    assert args.size == (7680, 3840) and args.projection == "equirect"
    assert parse([*FIXED, "-o", "a.mp4", "--size", "4096x4096"]).size == (4096, 4096)
    for bad in (["--size", "8194x4096"], ["--projection", "cube"], ["--eye-sep", "-1"]):
        with pytest.raises(SystemExit):
            parse([*FIXED, "-o", "a.mp4", *bad])
    assert run_cli([*FIXED, "-o", str(tmp_path / "d.mp4"), "--projection", "fisheye",
                    "--fov", "120"]) == 2
    assert "field of view must be 180..230" in capsys.readouterr().err
    assert run_cli([*FIXED, "-o", str(tmp_path / "x.png")]) == 2
    assert "one number field" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_frame_writer_checks_its_pattern(tmp_path):
    from galaxyview.movie.encoder import MovieError

    for bad in ("frames.png", "f%05d%d.png", "%05d/x.png", "f%d.jpg", "f%q.png"):
        with pytest.raises(MovieError):
            FrameWriter(str(tmp_path / bad), size=(32, 32))
    w = FrameWriter(str(tmp_path / "f%03d.png"), size=(32, 32), frames=2)
    w.add_frame(np.zeros((32, 32, 3), np.uint8))
    assert w.close() == tmp_path
    w.abort()  # the frames written stay
    assert [p.name for p in tmp_path.iterdir()] == ["f000.png"]
    w = FrameWriter(str(tmp_path / "g%03d.png"), size=(32, 32))
    w.abort()
    with pytest.raises(MovieError, match="no frames"):
        w.close()


@pytest.mark.slow
def test_a_4096_dome_master_frame(tmp_path, capsys):
    code = run_cli([*FIXED, "--png-dir", str(tmp_path), "--frames", "1", "--size", "4096x4096",
                    "--projection", "fisheye", "--tilt", "90"])
    assert code == 0, capsys.readouterr().err
    img = Image.open(tmp_path / "00000.png")
    assert img.size == (4096, 4096)
    lit = np.argwhere(np.asarray(img).max(axis=-1) > 40)
    assert len(lit) > 1000  # the target at the centre
    assert np.abs(np.median(lit, axis=0) - 2048).max() < 200


def test_wide_projections_frame_the_particles_closer_in(tmp_path):
    from galaxyview.movie.recorder import RecordOptions, record_simulation
    from galaxyview.render.offscreen import OffscreenRenderer
    from galaxyview.render.projections import WIDE_FIT_DEG, Projection
    from galaxyview.simulation import open_simulation

    distances = {}
    renderer = OffscreenRenderer(64, 64)
    try:
        for name in ("perspective", "fisheye"):
            sim = open_simulation("plummer", "cpu", 500, None, None, None)
            options = RecordOptions(1, 30, (64, 64), projection=Projection(name)).validate()
            writer = FrameWriter(str(tmp_path / name / "%03d.png"), size=(64, 64))
            try:
                record_simulation(sim, writer, options, renderer=renderer, show_progress=False)
            finally:
                sim.close()
            distances[name] = (renderer.camera.distance, renderer.camera.fov_deg)
    finally:
        renderer.close()
    (near, fov), (far, _) = distances["fisheye"], distances["perspective"]
    assert fov == WIDE_FIT_DEG and near < 0.6 * far  # sin(22.5) / sin(45)
