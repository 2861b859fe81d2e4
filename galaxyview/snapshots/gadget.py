"""Gadget-family snapshots: Gadget-2/3 binary (SnapFormat 1 and 2) and the HDF5 layout of
Gadget-4, AREPO and SWIFT (/Header, /PartTypeN groups with Coordinates, Velocities, Masses,
ParticleIDs; units in /Parameters, /Header or SWIFT's /Units).

Particle types map to components as for isolated galaxies (GalIC, MakeNewDisk): 0 gas (read
as collisionless STAR: galaxyview has no hydrodynamics), 1 HALO, 2 DISK, 3 BULGE, 4 STAR,
5 BLACK_HOLE, 6 (SWIFT's neutrinos) HALO. The file's length and mass units become the
run's unit system (G = 1), so velocities and the time are converted into it; binary files carry
no units: Gadget's defaults (1 kpc/h, 1e10 Msun/h, 1 km/s) are assumed, with a warning (an HDF5
file without unit attributes too). Cosmological runs (ComovingIntegrationOn, SWIFT's
"Cosmological run", or, where the file has no such flag, Redshift > 0) are read at their
scale factor a = Time in physical units: positions a x / h, velocities sqrt(a) v (Gadget's
internal velocities) and masses m / h, with a warning saying so; a header whose flag, Time,
Redshift or HubbleParam disagree is refused, naming them. Only single-file snapshots are read.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.files import read_bytes
from galaxyview.model.finite import NonFiniteError
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import KPC_CM, MSUN_G, MYR_S, UnitSystem
from galaxyview.snapshots import hdf5, hdf5_units

TYPE_COMPONENT = (Component.STAR, Component.HALO, Component.DISK, Component.BULGE,
                  Component.STAR, Component.BLACK_HOLE, Component.HALO)
A_TOLERANCE = 1e-3  # |a (1 + z) - 1| beyond this: Time and Redshift disagree

log = logging.getLogger(__name__)

_HEADER = [("npart", "i4", 6), ("massarr", "f8", 6), ("time", "f8", 1), ("redshift", "f8", 1),
           ("flag_sfr", "i4", 1), ("flag_feedback", "i4", 1), ("npart_total", "u4", 6),
           ("flag_cooling", "i4", 1), ("num_files", "i4", 1), ("box", "f8", 1),
           ("omega0", "f8", 1), ("omega_lambda", "f8", 1), ("hubble", "f8", 1)]


def _header_dtype(order: str) -> np.dtype:
    return np.dtype([(k, order + t, (n,)) if n > 1 else (k, order + t) for k, t, n in _HEADER])


def binary_order(head: bytes) -> tuple[str, int] | None:
    """(byte order, SnapFormat 1 or 2) when `head` (the first 16 bytes) starts a Gadget binary
    snapshot; None otherwise."""
    if len(head) < 16:
        return None
    for order in ("<", ">"):
        first = int(np.frombuffer(head[:4], order + "i4")[0])
        if first == 256:
            return order, 1
        if first == 8 and head[4:8] == b"HEAD":
            return order, 2
    return None


class _Records:
    """Fortran records of a Gadget binary file, with SnapFormat 2's block labels."""

    def __init__(self, path: Path, data: bytes, order: str, fmt: int):
        self.path, self.data, self.order, self.fmt, self.at = path, data, order, fmt, 0

    def _int(self) -> int:
        if self.at + 4 > len(self.data):
            raise SnapshotError(f"{self.path}: truncated Gadget file (a record ends past the "
                                f"end, at byte {self.at})")
        value = int(np.frombuffer(self.data, self.order + "i4", 1, self.at)[0])
        self.at += 4
        return value

    def record(self, what: str) -> bytes:
        if self.fmt == 2:
            self._int()
            self.at += 8  # the 4-letter label and the next block's size
            self._int()
        size = self._int()
        start, end = self.at, self.at + size
        if size < 0 or end + 4 > len(self.data):
            raise SnapshotError(f"{self.path}: truncated Gadget file: the {what} block needs "
                                f"{size} bytes from byte {start}, the file has {len(self.data)}")
        self.at = end
        if self._int() != size:
            raise SnapshotError(f"{self.path}: corrupt Gadget file: the {what} block's end "
                                f"marker does not match its start")
        return self.data[start:end]


def read_binary(path) -> tuple[ParticleState, UnitSystem, dict]:
    """A Gadget-2/3 binary snapshot: (state in N-body units, units, notes)."""
    path = Path(path)
    data = read_bytes(path, SnapshotError, "snapshot")
    found = binary_order(data[:16])
    if found is None:
        raise SnapshotError(f"{path}: not a Gadget binary snapshot")
    rec = _Records(path, data, *found)
    head = rec.record("header")
    if len(head) != 256:
        raise SnapshotError(f"{path}: the Gadget header is {len(head)} bytes, not 256")
    h = np.frombuffer(head, _header_dtype(found[0]), 1)[0]
    if int(h["num_files"]) > 1:
        raise SnapshotError(f"{path}: one file of a snapshot split into {int(h['num_files'])}; "
                            "galaxyview reads single-file snapshots (join the parts first)")
    npart = [int(k) for k in h["npart"]]
    n = sum(npart)
    if n == 0 or min(npart) < 0:
        raise SnapshotError(f"{path}: the Gadget header gives particle counts {npart}")
    blocks = {}
    for name, width in (("pos", 3), ("vel", 3)):
        raw = rec.record(name)
        kind = "f4" if len(raw) == 4 * width * n else "f8" if len(raw) == 8 * width * n else None
        if kind is None:
            raise SnapshotError(f"{path}: the {name} block holds {len(raw)} bytes, not "
                                f"{width} floats for each of {n} particles")
        blocks[name] = np.frombuffer(raw, found[0] + kind).reshape(n, width)
    rec.record("ids")
    massarr = np.asarray(h["massarr"], np.float64)
    need = [k for k in range(6) if npart[k] and massarr[k] == 0]
    varmass = np.zeros(0)
    if need:
        raw = rec.record("mass")
        count = sum(npart[k] for k in need)
        kind = "f4" if len(raw) == 4 * count else "f8" if len(raw) == 8 * count else None
        if kind is None:
            raise SnapshotError(f"{path}: the mass block holds {len(raw)} bytes, not a float "
                                f"for each of the {count} particles the header gives no fixed "
                                f"mass; the file is damaged")
        varmass = np.frombuffer(raw, found[0] + kind).astype(np.float64)
    mass, taken = [], 0
    for k in range(6):
        if npart[k] and massarr[k] == 0:
            mass.append(varmass[taken:taken + npart[k]])
            taken += npart[k]
        else:
            mass.append(np.full(npart[k], massarr[k]))
    _default_units(path, "a Gadget binary file carries no units")
    time, z, hubble = float(h["time"]), float(h["redshift"]), float(h["hubble"])
    cosmo = cosmology(path, None, time, z, hubble)
    return _to_state(path, npart, blocks["pos"], blocks["vel"], np.concatenate(mass),
                     0.0 if cosmo else time, hdf5_units.GADGET_CGS,
                     comoving=(*cosmo, False) if cosmo else None)


def cosmology(path, flag: bool | None, a: float, z: float | None, h: float | None,
              swift: bool = False) -> tuple[float, float] | None:
    """(a, h) to turn a cosmological snapshot's comoving values into physical ones, None for
    an isolated run. flag: the file's ComovingIntegrationOn (SWIFT's "Cosmological run"), None
    where it has none: then Redshift > 0 decides. A warning says what is applied;
    SnapshotError names the header fields that disagree."""
    given, z = z is not None, 0.0 if z is None else z
    cosmological = flag if flag is not None else z > 0
    if not cosmological:
        if z > 0:
            raise SnapshotError(f"{path}: ComovingIntegrationOn = 0 but Redshift = {z:g} > 0: "
                                f"the header contradicts itself, so galaxyview cannot tell "
                                f"comoving from physical values; correct ComovingIntegrationOn "
                                f"or Redshift")
        if flag is None and h is not None and h not in (0.0, 1.0):
            log.warning("%s: HubbleParam = %g but Redshift = 0 and no ComovingIntegrationOn "
                        "flag: read as an isolated (non-cosmological) run, without the a and h "
                        "scalings", path, h)
        return None
    if not 0 < a <= 1 + A_TOLERANCE:
        raise SnapshotError(f"{path}: a cosmological snapshot whose Time (the scale factor a) "
                            f"is {a:g}, not in (0, 1]; check ComovingIntegrationOn and Time")
    if given and abs(a * (1 + z) - 1) > A_TOLERANCE:
        raise SnapshotError(f"{path}: Time = {a:g} is not the scale factor 1/(1 + z) = "
                            f"{1 / (1 + z):g} of Redshift = {z:g}; galaxyview cannot tell "
                            f"which holds (check ComovingIntegrationOn, Time and Redshift)")
    h = 1.0 if swift else h
    if h is None or not h > 0:
        raise SnapshotError(f"{path}: a cosmological snapshot (a = {a:g}) with HubbleParam = "
                            f"{h}: the h scaling needs HubbleParam > 0")
    if swift:
        log.warning("%s: a cosmological SWIFT snapshot (a = %g, z = %g): positions read in "
                    "physical units (x a)", path, a, z)
    else:
        log.warning("%s: a cosmological Gadget snapshot (a = %g, z = %g, h = %g): read in "
                    "physical units: positions x a / h, masses / h, velocities x sqrt(a) "
                    "(Gadget's internal velocities)", path, a, z, h)
    return a, h


def _default_units(path, why: str) -> None:
    log.warning("%s: %s: Gadget's default units assumed for it: lengths in kpc/h, masses "
                "in 1e10 Msun/h, velocities in km/s (h applied only to a cosmological run)",
                path, why)


def _attr(group, path, *names, default=None, positive=False):
    """The first of attributes `names` of `group` as one finite number; `default` without."""
    for name in names:
        if group is not None and hdf5.attr(group, name, path, None) is not None:
            return hdf5.number(group, name, path, positive=positive)
    return default


def is_gadget_hdf5(f, path) -> bool:
    """An open h5py File in the Gadget-4 / AREPO / SWIFT layout."""
    return (hdf5.has(f, "Header", path) and
            any(name.startswith("PartType") for name in hdf5.names(f, path)))


def is_swift(f, path) -> bool:
    """The Gadget layout with SWIFT's /Units (galaxyview's export, which writes them too, aside)."""
    units = hdf5.get(f, "Units", path) if is_gadget_hdf5(f, path) else None
    return (units is not None and
            hdf5.attr(units, "Unit length in cgs (U_L)", path, None) is not None and
            hdf5.attr(f, "galaxyview_export", path, None) is None)


def read_hdf5(f, path) -> tuple[ParticleState, UnitSystem, dict]:
    """A Gadget-4 / AREPO / SWIFT HDF5 snapshot from the open h5py File `f`."""
    path = Path(path)
    header = hdf5.get(f, "Header", path)
    files = int(_attr(header, path, "NumFilesPerSnapshot", "NumFilesPerSnapshot ", default=1))
    if files > 1:
        raise SnapshotError(f"{path}: one file of a snapshot split into {files}; galaxyview "
                            "reads single-file snapshots (or a virtual file joining them)")
    params, units_group = hdf5.get(f, "Parameters", path), hdf5.get(f, "Units", path)
    swift = (units_group is not None and
             hdf5.attr(units_group, "Unit length in cgs (U_L)", path, None) is not None)
    if swift:
        length = _attr(units_group, path, "Unit length in cgs (U_L)", positive=True)
        mass_unit = _attr(units_group, path, "Unit mass in cgs (U_M)", positive=True)
        time_unit = _attr(units_group, path, "Unit time in cgs (U_t)", positive=True)
        if mass_unit is None or time_unit is None:
            raise SnapshotError(f"{path}: /Units gives a length unit but lacks "
                                f"'Unit mass in cgs (U_M)' or 'Unit time in cgs (U_t)'")
        velocity = length / time_unit
    else:
        length, mass_unit, velocity = _hdf5_units(f, path, params, header)
    flag = _attr(params, path, "ComovingIntegrationOn",
                 default=_attr(hdf5.get(f, "Cosmology", path), path, "Cosmological run",
                               default=None))
    hubble = _attr(header, path, "HubbleParam",
                   default=_attr(params, path, "HubbleParam", default=None))
    redshift = _attr(header, path, "Redshift", default=None)
    a = float(_attr(header, path, "Scale-factor", "Time", default=1.0))  # SWIFT's Time: cosmic
    cosmo = cosmology(path, None if flag is None else bool(flag), a,
                      None if redshift is None else float(redshift),
                      None if hubble is None else float(hubble), swift)
    counts = hdf5.counts(header, "NumPart_ThisFile", path, np.zeros(6, np.int64))
    masstable = np.ravel(hdf5.attr(header, "MassTable", path, np.zeros(len(counts))))
    if masstable.dtype.kind not in "biuf" or not (np.isfinite(masstable) & (masstable >= 0)).all():
        raise SnapshotError(f"{path}: attribute 'MassTable' of /Header = {masstable.tolist()}: "
                            f"must be masses >= 0; the file is damaged")
    npart, pos, vel, mass, groups = [], [], [], [], []
    for k in range(len(counts)):
        group = hdf5.get(f, f"PartType{k}", path)
        if not counts[k]:
            npart.append(0)
            continue
        if (group is None or not hdf5.has(group, "Coordinates", path) or
                not hdf5.has(group, "Velocities", path)):
            raise SnapshotError(f"{path}: PartType{k} lacks Coordinates or Velocities although "
                                f"the header counts {counts[k]} particles of that type")
        n = int(counts[k])
        x = hdf5.array(group, "Coordinates", path, width=3, rows=n)
        v = hdf5.array(group, "Velocities", path, width=3, rows=n)
        m = (hdf5.array(group, "Masses", path, rows=n) if hdf5.has(group, "Masses", path) else
             np.full(n, masstable[k] if k < len(masstable) else 0.0))
        npart.append(n)
        pos.append(x)
        vel.append(v)
        mass.append(m)
        groups.append(group)
    if not sum(npart):
        raise SnapshotError(f"{path}: the snapshot holds no particles")
    time = 0.0 if cosmo else float(_attr(header, path, "Time", default=0.0))
    own = _export_units(f, path)
    state, units, notes = _to_state(path, npart, np.concatenate(pos), np.concatenate(vel),
                                    np.concatenate(mass).astype(np.float64), time,
                                    (length, mass_unit, velocity),
                                    comoving=(*cosmo, swift) if cosmo else None, units=own)
    return _own_tags(path, f, groups, state, own), units, notes


def _export_units(f, path) -> UnitSystem | None:
    """The run's unit system of a galaxyview export (snapshots/export.py), else None."""
    length = _attr(f, path, "galaxyview_length_kpc", default=None, positive=True)
    mass = _attr(f, path, "galaxyview_mass_msun", default=None, positive=True)
    return UnitSystem(length, mass) if length is not None and mass is not None else None


_TAGS = (("GalaxyviewComponent", "component"), ("GalaxyviewGalaxy", "galaxy"),
         ("GalaxyviewRadius", "radius"))


def _own_tags(path, f, groups, state: ParticleState, own: UnitSystem | None) -> ParticleState:
    """A galaxyview export (snapshots/export.py): its component, galaxy and radius tags, its
    N-body time, and the particles in their order (ParticleIDs, the index in the state)."""
    def has(name):
        return all(hdf5.has(g, name, path) for g in groups)

    def joined(name):
        return np.concatenate([hdf5.array(g, name, path) for g in groups])

    if not has("GalaxyviewComponent"):
        return state
    for name, key in _TAGS:
        if has(name):
            values = joined(name)
            if len(values) != state.n:
                raise SnapshotError(f"{path}: {name} holds {len(values)} values for "
                                    f"{state.n} particles")
            if key == "radius":  # kpc in the file
                values = values / (own.length_kpc if own else 1.0)
            setattr(state, key, values)
    if own is not None:
        state.time = _attr(f, path, "galaxyview_time", default=state.time)
    names = (hdf5.attr(hdf5.get(groups[0], "GalaxyviewGalaxy", path), "names", path, None)
             if has("GalaxyviewGalaxy") else None)
    meta = {"galaxies": hdf5_units.read_names(names)} if names is not None else {}
    try:
        state = ParticleState(state.pos, state.vel, state.mass, state.component, state.galaxy,
                              state.time, meta, state.radius)
    except GalaxyviewError as exc:
        raise SnapshotError(f"{path}: galaxyview's tags: {exc}") from None
    ids = joined("ParticleIDs") if has("ParticleIDs") else None
    if ids is not None and len(ids) == state.n and np.array_equal(np.sort(ids),
                                                                  np.arange(state.n)):
        state = state.take(np.argsort(ids, kind="stable"))
    return state


_UNIT_KEYS = ("UnitLength_in_cm", "UnitMass_in_g", "UnitVelocity_in_cm_per_s")
_UNIT_DATASETS = ("Coordinates", "Masses", "Velocities")  # whose to_cgs give the same units


def _hdf5_units(f, path, params, header) -> tuple[float, float, float]:
    """Length, mass and velocity units in cgs: /Parameters' or /Header's Unit*_in_* (Gadget-4,
    AREPO), else the datasets' to_cgs attributes (Gadget-4), else Gadget's defaults (with a
    warning)."""
    units = [_attr(params, path, key, default=None, positive=True) or
             _attr(header, path, key, default=None, positive=True) for key in _UNIT_KEYS]
    types = [hdf5.get(f, g, path) for g in sorted(hdf5.names(f, path)) if g.startswith("PartType")]
    for k, name in enumerate(_UNIT_DATASETS):
        if units[k] is None:
            units[k] = next((_attr(hdf5.get(g, name, path), path, "to_cgs", positive=True)
                             for g in types if hdf5.has(g, name, path)
                             and hdf5.attr(hdf5.get(g, name, path), "to_cgs", path, None)
                             is not None), None)
    missing = [key for key, u in zip(_UNIT_KEYS, units) if u is None]
    if missing:
        _default_units(path, f"no {', '.join(missing)} (in /Parameters or /Header, or to_cgs "
                             f"on the datasets)")
    return tuple(float(hdf5_units.GADGET_CGS[k] if u is None else u)
                 for k, u in enumerate(units))


def _to_state(path, npart, pos, vel, mass, time, cgs, comoving, units=None):
    """N-body units of `units`, by default the file's: its length and mass units become the
    run's (G = 1)."""
    length_cm, mass_g, velocity_cms = cgs
    file_units = UnitSystem(length_kpc=length_cm / KPC_CM, mass_msun=mass_g / MSUN_G)
    units = units or file_units
    pos, vel = np.asarray(pos, np.float64), np.asarray(vel, np.float64)
    notes = {"gadget_types": npart}
    if comoving is not None:
        a, h, swift = comoving
        pos, mass = pos * a / h, mass / h
        vel = vel if swift else vel * math.sqrt(a)
        notes["scale_factor"] = a
    if units is not file_units:
        pos = pos * (file_units.length_kpc / units.length_kpc)
        mass = mass * (file_units.mass_msun / units.mass_msun)
    vel = vel * (velocity_cms / 1e5) / units.velocity_kms
    time_s = time * length_cm / velocity_cms
    component = np.concatenate([np.full(k, TYPE_COMPONENT[min(t, 6)], np.uint8)
                                for t, k in enumerate(npart)])
    with np.errstate(over="ignore"):
        try:
            state = ParticleState(pos, vel, mass, component, time=time_s / (units.time_myr * MYR_S))
        except NonFiniteError as exc:
            raise exc.in_file(path) from None
        except GalaxyviewError as exc:
            raise SnapshotError(f"{path}: {exc}") from None
    return state, units, notes
