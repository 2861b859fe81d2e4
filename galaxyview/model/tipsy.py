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


# -- writing ------------------------------------------------------------------------------------
def write_tipsy(path, snap: TipsySnapshot, *, byteorder: str = "big",
                overwrite: bool = False) -> Path:
    """Write `snap` (big-endian unless byteorder='little') through a temporary file in the same
    folder, renamed into place; an existing file is replaced only with overwrite=True."""
    if byteorder not in _ORDERS:
        raise GalaxyviewError(f"byteorder must be 'big' or 'little', got {byteorder!r}")
    path = Path(path)
    if path.is_dir():
        raise GalaxyviewError(f"{path} is a folder; give a file name for the snapshot")
    if path.exists() and not overwrite:
        raise GalaxyviewError(f"{path} already exists; choose another file name, or pass "
                              f"overwrite=True to replace it")
    if snap.n >= 2**31:
        raise GalaxyviewError(f"a Tipsy snapshot holds fewer than 2**31 particles, not {snap.n}")
    order = _ORDERS[byteorder]
    header = np.array([(snap.time, snap.n, 3, *snap.counts, 0)], header_dtype(order))
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as f:
            header.tofile(f)
            for block in _BLOCKS:
                getattr(snap, block).astype(block_dtype(block, order)).tofile(f)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise SnapshotError(f"{path}: cannot write it ({exc.strerror or exc})") from None
        raise
    return path


# -- ParticleState <-> Tipsy --------------------------------------------------------------------
def _codes(values: np.ndarray, hi: int, fallback: int) -> np.ndarray:
    """Exact integers in 0..hi as they are, anything else (fractions, NaN) as `fallback`."""
    v = values.astype(np.float64)
    ok = (v == np.round(v)) & (v >= 0) & (v <= hi)
    return np.where(ok, v, fallback).astype(np.int64)


def tipsy_to_state(snap: TipsySnapshot, source=None) -> ParticleState:
    """Particles in block order: gas (as STAR), dark (HALO), star (code from metals/tform)."""
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
            component, galaxy, snap.time)
    except GalaxyviewError as exc:
        raise SnapshotError(f"{source or 'Tipsy snapshot'}: {exc}") from None
    state.meta.update(source=str(source) if source else None, units=None)
    return state


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
    """Read a Tipsy file into a ParticleState (at least one particle), meta naming the file."""
    path = Path(path)
    snap = read_tipsy(path)
    if snap.n == 0:
        raise SnapshotError(f"{path}: the snapshot holds no particles; nothing to simulate")
    state = tipsy_to_state(snap, path)
    state.meta["scene"] = path.name
    return state


def save_state(path, state: ParticleState, params: Params | None = None, potential=None, *,
               byteorder: str = "big", overwrite: bool = False) -> Path:
    """Write a ParticleState as a Tipsy snapshot (see state_to_tipsy and write_tipsy)."""
    return write_tipsy(path, state_to_tipsy(state, params, potential), byteorder=byteorder,
                       overwrite=overwrite)
