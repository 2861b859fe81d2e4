"""Tipsy snapshots: the binary format that Bonsai, pynbody and the tipsy tools read and write.

Layout: a 32-byte header (time f8; nbodies, ndim, nsph, ndark, nstar, pad i4), then the gas,
dark and star blocks of float32 records. Big-endian is the standard; little-endian files are
read too (the byte order whose header agrees with the file size wins) and written on request.

Mapping to ParticleState: dark <-> Component.HALO; star <-> every other component, with the
component code kept in the star `metals` field and the galaxy index in `tform` when they are
exact small integers (otherwise DISK and galaxy 0, as for files written by other codes).
galaxyview has no hydrodynamics: gas particles are read as collisionless STAR particles and
their gas fields (rho, temp, hsmooth, metals) are dropped; nothing is written as gas.
The galaxy index of halo particles is not kept (the dark block has no spare field).

Radii (ParticleState.radius) have no Tipsy field (`eps` stays the softening): save_state writes
them, when any is > 0, to a ChaNGa-style ASCII auxiliary array beside the snapshot,
`<snapshot>.radius`: the particle count on the first line, then one value a line in the file's
particle order (gas, dark, star). load_snapshot reads that file when it is present.
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState

HEADER_BYTES = 32
SUFFIXES = (".tipsy", ".std", ".bin")
GALAXY_MAX = np.iinfo(np.int16).max

_BLOCKS = {  # field name -> number of float32 values
    "gas": (("mass", 1), ("pos", 3), ("vel", 3), ("rho", 1), ("temp", 1), ("hsmooth", 1),
            ("metals", 1), ("phi", 1)),
    "dark": (("mass", 1), ("pos", 3), ("vel", 3), ("eps", 1), ("phi", 1)),
    "star": (("mass", 1), ("pos", 3), ("vel", 3), ("metals", 1), ("tform", 1), ("eps", 1),
             ("phi", 1)),
}
_ORDERS = {"big": ">", "little": "<"}


def block_dtype(block: str, order: str = "=") -> np.dtype:
    """The record dtype of the 'gas', 'dark' or 'star' block in byte order '>', '<' or '='."""
    return np.dtype([(name, order + "f4") if k == 1 else (name, order + "f4", (k,))
                     for name, k in _BLOCKS[block]])


def header_dtype(order: str = "=") -> np.dtype:
    return np.dtype([("time", order + "f8")] + [
        (name, order + "i4") for name in ("nbodies", "ndim", "nsph", "ndark", "nstar", "pad")])


BLOCK_BYTES = {b: block_dtype(b).itemsize for b in _BLOCKS}  # 48, 36, 44


@dataclass
class TipsySnapshot:
    """The three particle blocks (structured arrays, native byte order) and the header time."""

    gas: np.ndarray = None
    dark: np.ndarray = None
    star: np.ndarray = None
    time: float = 0.0

    def __post_init__(self):
        for block in _BLOCKS:
            setattr(self, block, _as_block(getattr(self, block), block))
        self.time = float(self.time)

    @classmethod
    def empty(cls, nsph=0, ndark=0, nstar=0, time=0.0) -> "TipsySnapshot":
        """Zero-filled blocks of the given lengths."""
        return cls(*(np.zeros(k, block_dtype(b)) for b, k in zip(_BLOCKS, (nsph, ndark, nstar))),
                   time=time)

    @property
    def counts(self) -> tuple[int, int, int]:
        """(nsph, ndark, nstar)."""
        return len(self.gas), len(self.dark), len(self.star)

    @property
    def n(self) -> int:
        return sum(self.counts)


def _as_block(array, block: str) -> np.ndarray:
    dtype = block_dtype(block)
    if array is None:
        return np.zeros(0, dtype)
    array = np.asarray(array)
    if array.ndim != 1 or array.dtype.names != dtype.names:
        raise GalaxyviewError(
            f"the Tipsy {block} block must be a 1-D structured array with fields "
            f"{', '.join(dtype.names)}; got {array.dtype} of shape {array.shape}")
    try:
        return np.ascontiguousarray(array.astype(dtype, copy=False))
    except (TypeError, ValueError) as exc:
        raise GalaxyviewError(f"the Tipsy {block} block has wrong field shapes: {exc}") from None


# -- reading ------------------------------------------------------------------------------------
def _expected_size(nsph: int, ndark: int, nstar: int) -> int:
    return (HEADER_BYTES + nsph * BLOCK_BYTES["gas"] + ndark * BLOCK_BYTES["dark"]
            + nstar * BLOCK_BYTES["star"])


def _problems(header: np.void, size: int) -> list[str]:
    """What is wrong with a header read in one byte order, given the file size ([] if nothing)."""
    nb, ndim, nsph, ndark, nstar = (int(header[k]) for k in
                                    ("nbodies", "ndim", "nsph", "ndark", "nstar"))
    if ndim != 3:
        return [f"the header gives ndim = {ndim}, Tipsy snapshots have 3"]
    if min(nb, nsph, ndark, nstar) < 0:
        return [f"corrupt header: negative particle count (nbodies = {nb}, nsph = {nsph}, "
                f"ndark = {ndark}, nstar = {nstar})"]
    if nb != nsph + ndark + nstar:
        return [f"corrupt header: nbodies = {nb} but nsph + ndark + nstar = "
                f"{nsph} + {ndark} + {nstar} = {nsph + ndark + nstar}"]
    expected = _expected_size(nsph, ndark, nstar)
    counts = f"{nsph} gas, {ndark} dark and {nstar} star particles need {expected} bytes"
    if size < expected:
        return [f"truncated: the header announces {counts}, the file has only {size}; "
                f"the snapshot is incomplete (was its writing interrupted?)"]
    if size > expected:
        return [f"{size - expected} bytes too long: the header announces {counts}, the file "
                f"has {size}; corrupt, or not a plain Tipsy snapshot"]
    if not np.isfinite(header["time"]):
        return [f"corrupt header: time = {float(header['time'])}"]
    return []


def _header(path: Path, head: bytes, size: int) -> tuple[str, np.void]:
    """(byte order, header) of a consistent header, else a SnapshotError saying what is wrong."""
    if size == 0:
        raise SnapshotError(f"{path}: the file is empty (0 bytes); a Tipsy snapshot starts with a "
                            f"{HEADER_BYTES}-byte header (was its writing interrupted?)")
    if size < HEADER_BYTES:
        raise SnapshotError(f"{path}: only {size} bytes, shorter than the {HEADER_BYTES}-byte "
                            f"Tipsy header: truncated, or not a Tipsy snapshot")
    found = {}
    for order in (">", "<"):
        header = np.frombuffer(head, header_dtype(order), 1)[0]
        found[order] = (header, _problems(header, size))
        if not found[order][1]:
            return order, header
    plausible = [o for o in found if int(found[o][0]["ndim"]) == 3]
    if not plausible:
        raise SnapshotError(
            f"{path}: not a Tipsy snapshot: its header gives ndim = {int(found['>'][0]['ndim'])} "
            f"read big-endian and {int(found['<'][0]['ndim'])} read little-endian, never 3")
    raise SnapshotError(f"{path}: {found[plausible[0]][1][0]}")


def _open_error(path: Path, exc: OSError) -> SnapshotError:
    if isinstance(exc, FileNotFoundError):
        return SnapshotError(f"{path}: no such file; check the path")
    if isinstance(exc, IsADirectoryError):
        return SnapshotError(f"{path}: is a folder; give the path of a Tipsy snapshot file")
    return SnapshotError(f"{path}: cannot read it ({exc.strerror or exc})")


def read_tipsy(path) -> TipsySnapshot:
    """Read a Tipsy snapshot of either byte order; SnapshotError if it is missing or corrupt."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            order, header = _header(path, f.read(HEADER_BYTES), size)
            blocks = {b: np.fromfile(f, block_dtype(b, order), int(header[k]))
                      for b, k in zip(_BLOCKS, ("nsph", "ndark", "nstar"))}
    except OSError as exc:
        raise _open_error(path, exc) from None
    if any(len(blocks[b]) != int(header[k]) for b, k in zip(_BLOCKS, ("nsph", "ndark", "nstar"))):
        raise SnapshotError(f"{path}: truncated while reading (is another program writing it?)")
    return TipsySnapshot(**blocks, time=float(header["time"]))


def is_tipsy(path) -> bool:
    """True if `path` is a file whose header agrees with its size in either byte order."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            _header(Path(path), f.read(HEADER_BYTES), size)
        return True
    except (OSError, SnapshotError):
        return False


def radius_path(path) -> Path:
    """The radius file beside a snapshot: `<snapshot path>.radius`."""
    path = Path(path)
    return path.with_name(path.name + ".radius")


def read_radius(path, n: int) -> np.ndarray | None:
    """The radii (float32, file order) from the radius file beside snapshot `path` of `n`
    particles, None if there is none; SnapshotError naming the file and line if it is bad."""
    aux = radius_path(path)
    layout = "a radius file holds the particle count on its first line, then one radius a line"
    try:
        text = aux.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise SnapshotError(f"{aux}: not a text file; {layout}") from None
    except OSError as exc:
        raise SnapshotError(f"{aux}: cannot read the radius file ({exc.strerror or exc})") from None
    lines = text.split("\n")  # read_text turns \r\n into \n
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise SnapshotError(f"{aux}: the file is empty; {layout}")
    try:
        count = int(lines[0])
    except ValueError:
        raise SnapshotError(f"{aux}: line 1: {lines[0].strip()!r} is not a particle count; "
                            f"{layout}") from None
    if count != n:
        raise SnapshotError(f"{aux}: line 1 gives {count} particles but the snapshot {path} has "
                            f"{n}; the radius file belongs to another snapshot")
    values = lines[1:]
    if len(values) != n:
        raise SnapshotError(f"{aux}: {len(values)} radii after the count line, {n} expected; "
                            f"the file is truncated or corrupt")
    try:
        radius = np.array([float(word) for word in values], np.float64)
    except ValueError:
        for line, word in enumerate(values, start=2):
            try:
                float(word)
            except ValueError:
                raise SnapshotError(f"{aux}: line {line}: {word.strip()!r} is not a number; "
                                    f"{layout}") from None
        raise
    with np.errstate(over="ignore"):
        radius32 = radius.astype(np.float32)
    bad = np.flatnonzero(~(np.isfinite(radius32) & (radius32 >= 0)))
    if len(bad):
        value = radius[bad[0]]
        why = ("is not finite" if not np.isfinite(value) else "is negative" if value < 0 else
               "is too large for float32")
        raise SnapshotError(f"{aux}: line {bad[0] + 2}: radius {values[bad[0]].strip()} {why}; "
                            f"radii must be finite and >= 0")
    return radius32


# -- writing ------------------------------------------------------------------------------------
def _check_target(path: Path, overwrite: bool) -> None:
    if path.is_dir():
        raise GalaxyviewError(f"{path} is a folder; give a file name for the snapshot")
    if path.exists() and not overwrite:
        raise GalaxyviewError(f"{path} already exists; choose another file name, or pass "
                              f"overwrite=True to replace it")


def _write_temp(path: Path, write) -> Path:
    """A new temporary file beside `path`, filled by write(file); nothing is left on failure."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as f:
            write(f)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise SnapshotError(f"{path}: cannot write it ({exc.strerror or exc})") from None
        raise
    return tmp


def _rename(tmp: Path, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SnapshotError(f"{path}: cannot write it ({exc.strerror or exc})") from None


def write_tipsy(path, snap: TipsySnapshot, *, byteorder: str = "big",
                overwrite: bool = False) -> Path:
    """Write `snap` (big-endian unless byteorder='little') through a temporary file in the same
    folder, renamed into place; an existing file is replaced only with overwrite=True."""
    if byteorder not in _ORDERS:
        raise GalaxyviewError(f"byteorder must be 'big' or 'little', got {byteorder!r}")
    path = Path(path)
    _check_target(path, overwrite)
    if snap.n >= 2**31:
        raise GalaxyviewError(f"a Tipsy snapshot holds fewer than 2**31 particles, not {snap.n}")
    order = _ORDERS[byteorder]
    header = np.array([(snap.time, snap.n, 3, *snap.counts, 0)], header_dtype(order))

    def write(f):
        header.tofile(f)
        for block in _BLOCKS:
            getattr(snap, block).astype(block_dtype(block, order)).tofile(f)

    _rename(_write_temp(path, write), path)
    return path


# -- ParticleState <-> Tipsy --------------------------------------------------------------------
def _codes(values: np.ndarray, hi: int, fallback: int) -> np.ndarray:
    """Exact integers in 0..hi as they are, anything else (fractions, NaN) as `fallback`."""
    v = values.astype(np.float64)
    ok = (v == np.round(v)) & (v >= 0) & (v <= hi)
    return np.where(ok, v, fallback).astype(np.int64)


def tipsy_to_state(snap: TipsySnapshot, source=None, radius=None) -> ParticleState:
    """Particles in block order: gas (as STAR), dark (HALO), star (code from metals/tform);
    `radius` in the same order (as read_radius gives it), zeros without."""
    gas, dark, star = snap.gas, snap.dark, snap.star
    n_star_codes = max(Component)
    component = np.concatenate([np.full(len(gas), Component.STAR),
                                np.full(len(dark), Component.HALO),
                                _codes(star["metals"], n_star_codes, Component.DISK)])
    galaxy = np.concatenate([np.zeros(len(gas) + len(dark), np.int64),
                             _codes(star["tform"], GALAXY_MAX, 0)])
    try:
        state = ParticleState(
            *(np.concatenate([gas[k], dark[k], star[k]]) for k in ("pos", "vel", "mass")),
            component, galaxy, snap.time, radius=radius)
    except GalaxyviewError as exc:
        raise SnapshotError(f"{source or 'Tipsy snapshot'}: {exc}") from None
    state.meta.update(source=str(source) if source else None, units=None)
    return state


def snapshot_order(state: ParticleState) -> np.ndarray:
    """The state's particle indices in the order state_to_tipsy writes them: HALO particles
    (the dark block), then the others (the star block)."""
    halo = state.component == Component.HALO
    return np.concatenate([np.flatnonzero(halo), np.flatnonzero(~halo)])


def state_to_tipsy(state: ParticleState, params: Params | None = None,
                   potential: np.ndarray | None = None) -> TipsySnapshot:
    """HALO particles to the dark block, all others to the star block (metals = component code,
    tform = galaxy index); eps from `params` (defaults: Params()), phi from `potential`."""
    eps = (params or Params()).eps
    phi = np.zeros(state.n, np.float32) if potential is None else np.asarray(potential, np.float32)
    if phi.shape != (state.n,):
        raise GalaxyviewError(f"potential must hold one value per particle ({state.n}), "
                              f"got shape {phi.shape}")
    halo = state.component == Component.HALO
    snap = TipsySnapshot.empty(0, int(halo.sum()), int((~halo).sum()), state.time)
    for block, sel in ((snap.dark, halo), (snap.star, ~halo)):
        block["mass"], block["pos"], block["vel"] = state.mass[sel], state.pos[sel], state.vel[sel]
        block["eps"], block["phi"] = eps, phi[sel]
    snap.star["metals"] = state.component[~halo]
    snap.star["tform"] = state.galaxy[~halo]
    return snap


def load_snapshot(path) -> ParticleState:
    """Read a Tipsy file into a ParticleState (at least one particle), meta naming the file;
    radii from the radius file beside it when there is one (see read_radius)."""
    path = Path(path)
    snap = read_tipsy(path)
    if snap.n == 0:
        raise SnapshotError(f"{path}: the snapshot holds no particles; nothing to simulate")
    state = tipsy_to_state(snap, path, read_radius(path, snap.n))
    state.meta["scene"] = path.name
    return state


def save_state(path, state: ParticleState, params: Params | None = None, potential=None, *,
               byteorder: str = "big", overwrite: bool = False) -> Path:
    """Write a ParticleState as a Tipsy snapshot (see state_to_tipsy and write_tipsy) and, if
    state.has_radius, its radii to radius_path(path). With overwrite=False nothing is written
    if the snapshot or the radius file exists; a stale radius file of a replaced snapshot is
    removed when the state has no radii."""
    path = Path(path)
    aux = radius_path(path)
    _check_target(path, overwrite)
    if aux.is_dir():
        raise GalaxyviewError(f"{aux} is a folder where the radius file of {path.name} goes; "
                              f"move it or choose another file name")
    if aux.exists() and not overwrite:
        raise GalaxyviewError(f"{aux} (the radius file of {path.name}) already exists; choose "
                              f"another file name, or pass overwrite=True to replace it")
    snap = state_to_tipsy(state, params, potential)
    if not state.has_radius:
        write_tipsy(path, snap, byteorder=byteorder, overwrite=overwrite)
        if overwrite:
            try:
                aux.unlink(missing_ok=True)
            except OSError as exc:
                raise SnapshotError(f"{aux}: cannot remove this stale radius file "
                                    f"({exc.strerror or exc}); remove it by hand, or it is read "
                                    f"with the new snapshot {path.name}") from None
        return path
    radius = state.radius[snapshot_order(state)].tolist()
    text = f"{len(radius)}\n" + "".join(f"{r:.9g}\n" for r in radius)  # 9 digits: exact float32
    tmp = _write_temp(aux, lambda f: f.write(text.encode("ascii")))
    try:
        write_tipsy(path, snap, byteorder=byteorder, overwrite=overwrite)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _rename(tmp, aux)  # last: a failed snapshot write leaves the old files as they were
    return path
