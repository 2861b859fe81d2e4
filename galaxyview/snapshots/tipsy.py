"""Tipsy snapshots: the binary format that Bonsai, pynbody and the tipsy tools read and write.

Layout: a 32-byte header (time f8; nbodies, ndim, nsph, ndark, nstar, pad i4), then the gas,
dark and star blocks of float32 records. Big-endian is the standard; little-endian files are
read too (the byte order whose header agrees with the file size wins) and written on request.
ChaNGa's double-precision files (bDoublePos, bDoubleVel: positions and/or velocities as
float64) are read too: the .param file says which, else the file size (double positions, or
both); their values are rounded to float32, as galaxyview computes.

Mapping to ParticleState: dark <-> Component.HALO; star <-> every other component. The
star `metals` and `tform` fields keep their meaning (written as 0: galaxyview has neither).
What Tipsy has no field for goes to files beside the snapshot (snapshots/tipsy_aux.py): the
component and galaxy of every particle and the radii (when any is > 0) as ChaNGa-style ASCII
auxiliary arrays `<snapshot>.component`, `.galaxy`, `.radius`; the units, dt, theta and eps
as a ChaNGa parameter file `<snapshot>.param`. Without them, star particles read as DISK,
galaxy 0. `eps` (every particle's softening field) is the run's softening.
galaxyview has no hydrodynamics: gas particles are read as collisionless STAR particles and
their gas fields (rho, temp, hsmooth, metals) are dropped; nothing is written as gas.
A header whose last word (`pad`) is not 0 is Bonsai's (it stores its file version there):
Bonsai's units are 1 kpc and 100 km/s (G = 1), so its mass unit is 2.325e9 Msun.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.files import open_temp, remove_quietly
from galaxyview.model.finite import NonFiniteError
from galaxyview.model.params import Params, check_eps
from galaxyview.model.state import Component, ParticleState
from galaxyview.snapshots.tipsy_aux import (AUX_ARRAYS, PRECISIONS, aux_path, aux_text,
                                        find_param, param_path, param_text, read_aux,
                                        read_param)
from galaxyview.model.units import G_KPC_KMS2_PER_MSUN, UnitSystem

HEADER_BYTES = 32
log = logging.getLogger(__name__)
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


def block_dtype(block: str, order: str = "=", precision: str = "single") -> np.dtype:
    """The record dtype of the 'gas', 'dark' or 'star' block in byte order '>', '<' or '=',
    with the fields that `precision` (a PRECISIONS key) stores as float64."""
    wide = PRECISIONS[precision]
    return np.dtype([(name, order + ("f8" if name in wide else "f4"), (k,)) if k > 1
                     else (name, order + "f4") for name, k in _BLOCKS[block]])


def header_dtype(order: str = "=") -> np.dtype:
    return np.dtype([("time", order + "f8")] + [
        (name, order + "i4") for name in ("nbodies", "ndim", "nsph", "ndark", "nstar", "pad")])


BLOCK_BYTES = {b: block_dtype(b).itemsize for b in _BLOCKS}  # 48, 36, 44 in single precision


@dataclass
class TipsySnapshot:
    """The three particle blocks (structured arrays, native byte order) and the header time."""

    gas: np.ndarray = None
    dark: np.ndarray = None
    star: np.ndarray = None
    time: float = 0.0
    pad: int = 0  # the header's last word: Bonsai's file version, 0 elsewhere
    precision: str = "single"  # the file's (a PRECISIONS key); the blocks hold float32

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
def _expected_size(nsph: int, ndark: int, nstar: int, precision: str = "single") -> int:
    return HEADER_BYTES + sum(k * block_dtype(b, precision=precision).itemsize
                              for b, k in zip(_BLOCKS, (nsph, ndark, nstar)))


def _fields(header: np.void) -> tuple[int, int, int, int, int]:
    """(nbodies, ndim, nsph, ndark, nstar) as Python ints."""
    return tuple(int(header[k]) for k in ("nbodies", "ndim", "nsph", "ndark", "nstar"))


def _precision(header: np.void, size: int, declared: str | None = None) -> str | None:
    """The precision whose records fill the file's `size` bytes: `declared` (by the .param
    file), else single, double positions or double; None if none does."""
    counts = _fields(header)[2:]
    options = (declared,) if declared else ("single", "double positions", "double")
    return next((p for p in options if _expected_size(*counts, p) == size), None)


def _problems(header: np.void, size: int, declared: str | None = None) -> list[str]:
    """What is wrong with a header read in one byte order, given the file size ([] if nothing)."""
    nb, ndim, nsph, ndark, nstar = _fields(header)
    if ndim != 3:
        return [f"the header gives ndim = {ndim}, Tipsy snapshots have 3"]
    if min(nb, nsph, ndark, nstar) < 0:
        return [f"corrupt Tipsy header: negative particle count (nbodies = {nb}, nsph = {nsph}, "
                f"ndark = {ndark}, nstar = {nstar}); the file is damaged"]
    if nb != nsph + ndark + nstar:
        return [f"corrupt header: nbodies = {nb} but nsph + ndark + nstar = "
                f"{nsph} + {ndark} + {nstar} = {nsph + ndark + nstar}"]
    expected = _expected_size(nsph, ndark, nstar, declared or "single")
    counts = f"{nsph} gas, {ndark} dark and {nstar} star particles"
    fits = _precision(header, size)
    if declared and fits and size != expected:
        return [f"its .param file declares {declared} precision (bDoublePos, bDoubleVel): "
                f"{counts} need {expected} bytes, but the file has {size}, as in {fits} "
                f"precision; correct bDoublePos and bDoubleVel there"]
    if size < expected:
        return [f"a truncated Tipsy file: its header promises {nb} particles ({counts}: "
                f"{expected} bytes), the file holds only {size} bytes; the snapshot is "
                f"incomplete (was its writing interrupted?)"]
    if declared and size > expected:
        return [f"{size - expected} bytes too long for the {declared} precision that its .param "
                f"file declares (bDoublePos, bDoubleVel): {counts} need {expected} bytes, the "
                f"file has {size}; corrupt, or correct bDoublePos and bDoubleVel there"]
    if not fits:
        sizes = ", ".join(f"{_expected_size(nsph, ndark, nstar, p)} {words}" for p, words in (
            ("single", "in single precision"), ("double positions", "with double positions"),
            ("double", "with double positions and velocities")))
        return [f"{size - expected} bytes too long: {counts} need {sizes}; the file has {size}; "
                f"corrupt, or not a plain Tipsy snapshot"]
    if not np.isfinite(header["time"]):
        return [f"corrupt header: time = {float(header['time'])}"]
    return []


def _header(path: Path, head: bytes, size: int,
            declared: str | None = None) -> tuple[str, np.void, str]:
    """(byte order, header, precision) of a consistent header, else a SnapshotError saying what
    is wrong."""
    if size == 0:
        raise SnapshotError(f"{path}: the file is empty (0 bytes); a Tipsy snapshot starts with a "
                            f"{HEADER_BYTES}-byte header (was its writing interrupted?)")
    if size < HEADER_BYTES:
        raise SnapshotError(f"{path}: only {size} bytes, shorter than the {HEADER_BYTES}-byte "
                            f"Tipsy header: truncated, or not a Tipsy snapshot")
    found = {}
    for order in (">", "<"):
        header = np.frombuffer(head, header_dtype(order), 1)[0]
        found[order] = (header, _problems(header, size, declared))
        if not found[order][1]:
            return order, header, _precision(header, size, declared)
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


def read_tipsy(path, declared: str | None = None) -> TipsySnapshot:
    """Read a Tipsy snapshot of either byte order, in precision `declared` (a PRECISIONS key)
    or, by default, the one its size gives; SnapshotError if it is missing or corrupt."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            order, header, precision = _header(path, f.read(HEADER_BYTES), size, declared)
            blocks = {b: np.fromfile(f, block_dtype(b, order, precision), int(header[k]))
                      for b, k in zip(_BLOCKS, ("nsph", "ndark", "nstar"))}
    except OSError as exc:
        raise _open_error(path, exc) from None
    if any(len(blocks[b]) != int(header[k]) for b, k in zip(_BLOCKS, ("nsph", "ndark", "nstar"))):
        raise SnapshotError(f"{path}: truncated while reading (is another program writing it?)")
    _check_narrow(path, blocks, precision, declared)
    return TipsySnapshot(**blocks, time=float(header["time"]), pad=int(header["pad"]),
                         precision=precision)


def _check_narrow(path: Path, blocks: dict, precision: str, declared: str | None) -> None:
    """SnapshotError if a float64 field holds finite values beyond float32."""
    limit = float(np.finfo(np.float32).max)
    for name in PRECISIONS[precision]:
        over = [np.abs(v[np.isfinite(v) & (np.abs(v) > limit)])
                for v in (blocks[b][name] for b in _BLOCKS)]
        if any(len(v) for v in over):
            top = max(float(v.max()) for v in over if len(v))
            hint = ("" if declared or precision != "double positions" else
                    f"; its precision was taken from its size: if its velocities are the double "
                    f"ones, write bDoublePos = 0 and bDoubleVel = 1 in {param_path(path)}")
            raise SnapshotError(f"{path}: {name} values up to {top:.3g}, beyond float32 "
                                f"(galaxyview computes in float32){hint}")


def damage(path) -> SnapshotError | None:
    """The error of a file with a Tipsy header (ndim 3, counts that add up, a finite time) that
    is damaged: a negative count, or a size that no precision's records fill. None for any
    other file: a sound Tipsy file, or not a Tipsy file. Such a file must not go to pynbody:
    it pads missing particles with zeros."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(HEADER_BYTES)
    except OSError:
        return None
    if len(head) < HEADER_BYTES:
        return None
    for order in (">", "<"):
        header = np.frombuffer(head, header_dtype(order), 1)[0]
        nb, ndim, nsph, ndark, nstar = _fields(header)
        if ndim != 3 or nb != nsph + ndark + nstar or not np.isfinite(header["time"]):
            continue
        if min(nsph, ndark, nstar) < 0 or _precision(header, size) is None:
            return SnapshotError(f"{path}: {_problems(header, size)[0]}")
    return None


def is_tipsy(path) -> bool:
    """True if `path` is a file whose header agrees with its size in either byte order (in
    single precision, double positions, or double)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            _header(Path(path), f.read(HEADER_BYTES), size)
        return True
    except (OSError, SnapshotError):
        return False


def radius_path(path) -> Path:
    """The radius file beside a snapshot: `<snapshot path>.radius`."""
    return aux_path(path, "radius")


def read_radius(path, n: int) -> np.ndarray | None:
    """The radii (float32, file order) from the radius file beside snapshot `path` of `n`
    particles, None if there is none; SnapshotError naming the file and line if it is bad."""
    return read_aux(path, "radius", n)


def companion_paths(path) -> list[Path]:
    """The files save_state may write beside snapshot `path`: auxiliary arrays and .param."""
    return [aux_path(path, name) for name in AUX_ARRAYS] + [param_path(path)]


# -- writing ------------------------------------------------------------------------------------
def _check_target(path: Path, overwrite: bool) -> None:
    if path.is_dir():
        raise SnapshotError(f"{path} is a folder; give a file name for the snapshot")
    if path.exists() and not overwrite:
        raise SnapshotError(f"{path} already exists; choose another file name, or pass "
                            f"overwrite=True to replace it")


def _write_temp(path: Path, write) -> Path:
    """A new temporary file beside `path`, filled by write(file); nothing is left on failure."""
    try:
        tmp, fd = open_temp(path)
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot write it ({exc.strerror or exc}); choose a "
                            f"folder you can write to") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
    except BaseException as exc:
        remove_quietly(tmp)
        if isinstance(exc, OSError):
            raise SnapshotError(f"{path}: cannot write it ({exc.strerror or exc})") from None
        raise
    return tmp


def _rename(tmp: Path, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except OSError as exc:
        remove_quietly(tmp)
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
BONSAI_UNITS = UnitSystem(length_kpc=1.0, mass_msun=1.0e4 / G_KPC_KMS2_PER_MSUN)  # 100 km/s


def tipsy_to_state(snap: TipsySnapshot, source=None, radius=None, component=None,
                   galaxy=None) -> ParticleState:
    """Particles in block order: gas (as STAR), dark (HALO), star (DISK); `radius`,
    `component`, `galaxy` in the same order (as read_aux gives them) replace the defaults."""
    gas, dark, star = snap.gas, snap.dark, snap.star
    name = source or "Tipsy snapshot"
    arrays = {k: np.concatenate([gas[k], dark[k], star[k]]) for k in ("pos", "vel", "mass")}
    if component is None:
        component = np.concatenate([np.full(len(gas), Component.STAR),
                                    np.full(len(dark), Component.HALO),
                                    np.full(len(star), Component.DISK)])
    try:
        state = ParticleState(*arrays.values(), component, galaxy, snap.time, radius=radius)
    except NonFiniteError as exc:
        raise exc.in_file(name) from None
    except GalaxyviewError as exc:
        raise SnapshotError(f"{name}: {exc}") from None
    state.meta.update(source=str(source) if source else None, units=None)
    return state


def snapshot_order(state: ParticleState) -> np.ndarray:
    """The state's particle indices in the order state_to_tipsy writes them: HALO particles
    (the dark block), then the others (the star block)."""
    halo = state.component == Component.HALO
    return np.concatenate([np.flatnonzero(halo), np.flatnonzero(~halo)])


def state_to_tipsy(state: ParticleState, params: Params | None = None,
                   potential: np.ndarray | None = None) -> TipsySnapshot:
    """HALO particles to the dark block, all others to the star block (metals, tform 0); eps
    from `params` (defaults: Params()), phi from `potential`."""
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
    return snap


def read_snapshot(path) -> tuple[ParticleState, dict, UnitSystem | None]:
    """(state, parameters found, units) of a Tipsy file and the files beside it: component,
    galaxy and radius arrays; dt, theta, eps and the modules from `<snapshot>.param` (eps
    from the particles' eps fields when they agree and there is no dSoft); units from the
    .param file, or Bonsai's for a Bonsai file."""
    path = Path(path)
    found, units, precision = read_param(path)
    snap = read_tipsy(path, precision)
    if snap.n == 0:
        raise SnapshotError(f"{path}: the snapshot holds no particles; nothing to simulate")
    arrays = {name: read_aux(path, name, snap.n) for name in AUX_ARRAYS}
    state = tipsy_to_state(snap, path, **arrays)
    state.meta.update(scene=path.name, precision=snap.precision)
    eps = np.concatenate([snap.dark["eps"], snap.star["eps"]]).astype(np.float64)
    if "eps" not in found and len(eps) and np.all(eps == eps[0]) and _valid_eps(eps[0]):
        found["eps"] = float(eps[0])
    if units is None and snap.pad != 0:
        units = BONSAI_UNITS
        state.meta["flavour"] = "bonsai"
    elif not find_param(path).is_file():
        log.warning("%s: no %s beside it; read in N-body units (G = 1), with the default dt, "
                    "theta and eps unless given", path, param_path(path).name)
    return state, found, units


def _valid_eps(eps) -> bool:
    try:
        check_eps(float(eps))
    except GalaxyviewError:
        return False
    return True


def load_snapshot(path) -> ParticleState:
    """Read a Tipsy file into a ParticleState (at least one particle), meta naming the file;
    the component, galaxy and radius files beside it when there are (see read_snapshot)."""
    return read_snapshot(path)[0]


def _stage(path: Path, text: str) -> Path:
    return _write_temp(path, lambda f: f.write(text.encode("ascii")))


def save_state(path, state: ParticleState, params: Params | None = None, potential=None, *,
               units: UnitSystem | None = None, byteorder: str = "big",
               overwrite: bool = False) -> Path:
    """Write a ParticleState as a Tipsy snapshot (see state_to_tipsy and write_tipsy), its
    component and galaxy arrays, its radii when state.has_radius, and a .param file when
    `params` or `units` are given. With overwrite=False nothing is written if any of these
    files exists; companion files of a replaced snapshot that the new one has not are removed."""
    path = Path(path)
    _check_target(path, overwrite)
    for aux in companion_paths(path):
        if aux.is_dir():
            raise SnapshotError(f"{aux} is a folder where a companion file of {path.name} "
                                f"goes; move it or choose another file name")
        if aux.exists() and not overwrite:
            raise SnapshotError(f"{aux} (a companion file of {path.name}) already exists; "
                                f"choose another file name, or pass overwrite=True to "
                                f"replace it")
    snap = state_to_tipsy(state, params, potential)
    order = snapshot_order(state)
    texts = {aux_path(path, "component"): aux_text(state.component[order].astype(np.int64)),
             aux_path(path, "galaxy"): aux_text(state.galaxy[order].astype(np.int64))}
    if state.has_radius:
        texts[radius_path(path)] = aux_text(state.radius[order])
    if params is not None or units is not None:
        texts[param_path(path)] = param_text(params or Params(), units)
    staged = {}
    try:
        for aux, text in texts.items():
            staged[aux] = _stage(aux, text)
        write_tipsy(path, snap, byteorder=byteorder, overwrite=overwrite)
    except BaseException:
        for tmp in staged.values():
            remove_quietly(tmp)
        raise
    for aux, tmp in staged.items():  # last: a failed snapshot write leaves the old files
        _rename(tmp, aux)
    for aux in companion_paths(path):
        if aux not in texts and overwrite:
            try:
                aux.unlink(missing_ok=True)
            except OSError as exc:
                why = exc.strerror or exc
                raise SnapshotError(f"{aux}: cannot remove this stale file ({why}); remove it "
                                    f"by hand, or it is read with the new snapshot "
                                    f"{path.name}") from None
    return path
