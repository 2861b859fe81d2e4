"""Gadget-family snapshots: Gadget-2/3 binary (SnapFormat 1 and 2) and the HDF5 layout of
Gadget-4, AREPO and SWIFT (/Header, /PartTypeN groups with Coordinates, Velocities, Masses,
ParticleIDs; units in /Parameters, /Header or SWIFT's /Units).

Particle types map to components as for isolated galaxies (GalIC, MakeNewDisk): 0 gas (read
as collisionless STAR: galaxyview has no hydrodynamics), 1 HALO, 2 DISK, 3 BULGE, 4 STAR,
5 BLACK_HOLE, 6 (SWIFT's neutrinos) HALO. The file's length and mass units become the
run's unit system (G = 1), so velocities and the time are converted into it; binary files carry
no units: Gadget's defaults (1 kpc, 1e10 Msun, 1 km/s) are assumed. Comoving runs are read at
their scale factor: positions a x / h, velocities sqrt(a) v (Gadget) and masses m / h.
Only single-file snapshots are read.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.model.finite import NonFiniteError
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import KPC_CM, MSUN_G, MYR_S, UnitSystem

TYPE_COMPONENT = (Component.STAR, Component.HALO, Component.DISK, Component.BULGE,
                  Component.STAR, Component.BLACK_HOLE, Component.HALO)
GADGET_DEFAULT_CGS = (KPC_CM, 1e10 * MSUN_G, 1e5)  # length, mass, velocity: kpc, 1e10 Msun, km/s
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
    data = path.read_bytes()
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
        kind = "f4" if len(raw) == 4 * count else "f8"
        varmass = np.frombuffer(raw, found[0] + kind).astype(np.float64)
        if len(varmass) != count:
            raise SnapshotError(f"{path}: the mass block holds {len(varmass)} masses, the "
                                f"header asks for {count}")
    mass, taken = [], 0
    for k in range(6):
        if npart[k] and massarr[k] == 0:
            mass.append(varmass[taken:taken + npart[k]])
            taken += npart[k]
        else:
            mass.append(np.full(npart[k], massarr[k]))
    log.warning("%s: a Gadget binary file carries no units; Gadget's defaults assumed (1 kpc, "
                "1e10 Msun, 1 km/s)", path)
    return _to_state(path, npart, blocks["pos"], blocks["vel"], np.concatenate(mass),
                     float(h["time"]), GADGET_DEFAULT_CGS, comoving=None)


def _attr(group, *names, default=None):
    for name in names:
        if group is not None and name in group.attrs:
            value = np.ravel(group.attrs[name])
            return value if len(value) > 1 else value[0]
    return default


def is_gadget_hdf5(f) -> bool:
    """An open h5py File in the Gadget-4 / AREPO / SWIFT layout."""
    return "Header" in f and any(name.startswith("PartType") for name in f)


def read_hdf5(f, path) -> tuple[ParticleState, UnitSystem, dict]:
    """A Gadget-4 / AREPO / SWIFT HDF5 snapshot from the open h5py File `f`."""
    path = Path(path)
    header = f["Header"]
    files = int(_attr(header, "NumFilesPerSnapshot", "NumFilesPerSnapshot ", default=1))
    if files > 1:
        raise SnapshotError(f"{path}: one file of a snapshot split into {files}; galaxyview "
                            "reads single-file snapshots (or a virtual file joining them)")
    params, units_group = f.get("Parameters"), f.get("Units")
    swift = units_group is not None and "Unit length in cgs (U_L)" in units_group.attrs
    if swift:
        length = float(_attr(units_group, "Unit length in cgs (U_L)"))
        mass_unit = float(_attr(units_group, "Unit mass in cgs (U_M)"))
        velocity = length / float(_attr(units_group, "Unit time in cgs (U_t)"))
    else:
        default = GADGET_DEFAULT_CGS
        length = float(_attr(params, "UnitLength_in_cm", default=None) or
                       _attr(header, "UnitLength_in_cm", default=default[0]))
        mass_unit = float(_attr(params, "UnitMass_in_g", default=None) or
                          _attr(header, "UnitMass_in_g", default=default[1]))
        velocity = float(_attr(params, "UnitVelocity_in_cm_per_s", default=None) or
                         _attr(header, "UnitVelocity_in_cm_per_s", default=default[2]))
    cosmo = f.get("Cosmology")
    comoving = bool(_attr(params, "ComovingIntegrationOn", default=0) or
                    _attr(cosmo, "Cosmological run", default=0))
    hubble = float(_attr(header, "HubbleParam", default=None) or
                   _attr(params, "HubbleParam", default=1.0) or 1.0)
    counts = np.ravel(_attr(header, "NumPart_ThisFile", default=np.zeros(6))).astype(np.int64)
    masstable = np.ravel(_attr(header, "MassTable", default=np.zeros(len(counts))))
    npart, pos, vel, mass = [], [], [], []
    for k in range(len(counts)):
        group = f.get(f"PartType{k}")
        if not counts[k]:
            npart.append(0)
            continue
        if group is None or "Coordinates" not in group or "Velocities" not in group:
            raise SnapshotError(f"{path}: PartType{k} lacks Coordinates or Velocities although "
                                f"the header counts {counts[k]} particles of that type")
        x, v = group["Coordinates"][()], group["Velocities"][()]
        m = (group["Masses"][()] if "Masses" in group else
             np.full(len(x), masstable[k] if k < len(masstable) else 0.0))
        if not (len(x) == len(v) == len(m) == counts[k]):
            raise SnapshotError(f"{path}: PartType{k} holds {len(x)} coordinates, {len(v)} "
                                f"velocities, {len(m)} masses; the header counts {counts[k]}")
        npart.append(int(counts[k]))
        pos.append(x)
        vel.append(v)
        mass.append(m)
    if not sum(npart):
        raise SnapshotError(f"{path}: the snapshot holds no particles")
    a = float(_attr(header, "Time", "Scale-factor", default=1.0)) if comoving else None
    time = 0.0 if comoving else float(_attr(header, "Time", default=0.0))
    return _to_state(path, npart, np.concatenate(pos), np.concatenate(vel),
                     np.concatenate(mass).astype(np.float64), time,
                     (length, mass_unit, velocity), comoving=(a, 1.0 if swift else hubble,
                                                              swift) if comoving else None)


def _to_state(path, npart, pos, vel, mass, time, cgs, comoving):
    """N-body units from the file's: its length and mass units are the run's (G = 1)."""
    length_cm, mass_g, velocity_cms = cgs
    units = UnitSystem(length_kpc=length_cm / KPC_CM, mass_msun=mass_g / MSUN_G)
    pos, vel = np.asarray(pos, np.float64), np.asarray(vel, np.float64)
    notes = {"gadget_types": npart}
    if comoving is not None:
        a, h, swift = comoving
        pos, mass = pos * a / h, mass / h
        vel = vel if swift else vel * math.sqrt(a)
        notes["scale_factor"] = a
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
