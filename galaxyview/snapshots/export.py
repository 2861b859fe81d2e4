"""A state as a Gadget-4 style HDF5 snapshot, which pynbody and yt open as they are
(docs/snapshot-format.md, "Export").

Values are in Gadget's default units, the ones yt assumes for a Gadget file (it reads no
units from one) and pynbody reads from /Units: kpc, 1e10 Msun, km/s, time in kpc / (km/s);
float64, so that galaxyview reads the file back into the run's unit system exactly.
/Header: NumPart_ThisFile, NumPart_Total (+ _HighWord), MassTable (0: masses per particle),
Time, Redshift = 0, BoxSize (a cube about the particles), HubbleParam = 1, Omega0 =
OmegaLambda = 0, NumFilesPerSnapshot = 1, Flag_DoublePrecision = 1. /Parameters: the units
(UnitLength_in_cm, ...), ComovingIntegrationOn = 0; /Units as in galaxyview's own files.
/PartTypeN by component (TYPE_OF): Coordinates, Velocities, Masses, ParticleIDs (the
particle's index in the state) and galaxyview's tags GalaxyviewComponent, GalaxyviewGalaxy
(GalaxyviewRadius where any radius > 0); every dataset with its unit attributes (hdf5_units).
Root attributes galaxyview_export, galaxyview_length_kpc, galaxyview_mass_msun (the run's
unit system) and galaxyview_time (N-body) let gadget.read_hdf5 restore the run's numbers, the
particles' order and their tags.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from galaxyview.errors import SnapshotError
from galaxyview.files import check_output_path, open_temp, remove_quietly
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import KPC_CM, MYR_S, UnitSystem
from galaxyview.snapshots import hdf5_units
from galaxyview.version import __version__

FORMAT = "gadget4"
SUFFIXES = (".hdf5", ".h5")
# galaxyview component -> Gadget particle type (as isolated-galaxy codes use them; 0 is gas)
TYPE_OF = {Component.HALO: 1, Component.DISK: 2, Component.BULGE: 3, Component.STAR: 4,
           Component.SATELLITE: 4, Component.BLACK_HOLE: 5}
TAGS = {"GalaxyviewComponent": ("component", np.uint8), "GalaxyviewGalaxy": ("galaxy", np.int16),
        "GalaxyviewRadius": ("radius", np.float64)}
_DATASETS = (("Coordinates", "pos"), ("Velocities", "vel"), ("Masses", "mass"),
             ("ParticleIDs", "ids"))


def particle_types(component: np.ndarray) -> np.ndarray:
    """The Gadget particle type of each particle (TYPE_OF)."""
    table = np.full(256, 4, np.int64)
    for comp, kind in TYPE_OF.items():
        table[int(comp)] = kind
    return table[np.asarray(component, np.uint8)]


def write_gadget4(path, state: ParticleState, units: UnitSystem | None,
                  overwrite: bool = False) -> Path:
    """Write `state` (N-body units of `units`) as a Gadget-4 HDF5 snapshot. A run without a
    galaxy unit system (plain N-body units; the SI ring scenes) is refused."""
    path = check_output_path(path, overwrite, SnapshotError, "pass overwrite=True to replace it")
    if path.suffix.lower() not in SUFFIXES:
        raise SnapshotError(f"{path}: a Gadget-4 snapshot is an HDF5 file; give a name ending "
                            f"in .hdf5")
    if units is None:
        raise SnapshotError(f"{path}: the run has no physical unit system (N-body units, or "
                            f"the SI of a ring scene), so a Gadget snapshot's kpc, Msun and "
                            f"km/s cannot be given; give the scene [units], or write "
                            f"galaxyview's format (.h5) or Tipsy")
    import h5py

    tmp = None
    try:
        tmp, fd = open_temp(path)  # galaxyview's own temporary name (files.py)
        os.close(fd)
        with h5py.File(tmp, "w") as f:
            _write(f, state, units)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            remove_quietly(tmp)
        if isinstance(exc, OSError):
            raise SnapshotError(f"{path}: writing it failed ({exc.strerror or exc})") from None
        raise
    return path


def _write(f, state: ParticleState, units: UnitSystem) -> None:
    cgs = hdf5_units.GADGET_CGS  # cm, g, cm/s: kpc, 1e10 Msun, km/s
    kinds = particle_types(state.component)
    counts = np.bincount(kinds, minlength=6)[:6]
    scale = {"pos": units.length_kpc, "vel": units.velocity_kms, "mass": units.mass_msun / 1e10}
    arrays = {key: np.asarray(getattr(state, key), np.float64) * factor
              for key, factor in scale.items()}
    arrays["ids"] = np.arange(state.n, dtype=np.uint64)
    time_unit = KPC_CM / 1e5 / MYR_S  # Gadget's, kpc / (km/s), in Myr
    extent = float(np.abs(arrays["pos"]).max(initial=0.0))
    header = f.create_group("Header")
    for key, value in (("NumPart_ThisFile", counts.astype(np.int32)),
                       ("NumPart_Total", counts.astype(np.uint32)),
                       ("NumPart_Total_HighWord", (counts >> 32).astype(np.uint32)),
                       ("MassTable", np.zeros(6)),
                       ("Time", float(state.time) * units.time_myr / time_unit),
                       ("Redshift", 0.0), ("BoxSize", 2.0 * extent if extent else 1.0),
                       ("NumFilesPerSnapshot", np.int32(1)), ("Omega0", 0.0),
                       ("OmegaLambda", 0.0), ("HubbleParam", 1.0),
                       ("Flag_Sfr", np.int32(0)), ("Flag_Cooling", np.int32(0)),
                       ("Flag_Feedback", np.int32(0)), ("Flag_StellarAge", np.int32(0)),
                       ("Flag_Metals", np.int32(0)), ("Flag_DoublePrecision", np.int32(1))):
        header.attrs[key] = value
    length, mass, velocity = cgs
    params = f.create_group("Parameters")
    params.attrs["UnitLength_in_cm"], params.attrs["UnitMass_in_g"] = length, mass
    params.attrs["UnitVelocity_in_cm_per_s"] = velocity
    params.attrs["ComovingIntegrationOn"] = np.int32(0)
    params.attrs["Omega0"] = params.attrs["OmegaLambda"] = 0.0
    params.attrs["HubbleParam"] = 1.0
    hdf5_units.write_units_group(f, cgs)
    f.attrs["galaxyview_export"], f.attrs["galaxyview_version"] = FORMAT, __version__
    f.attrs["galaxyview_length_kpc"] = units.length_kpc
    f.attrs["galaxyview_mass_msun"] = units.mass_msun
    f.attrs["galaxyview_time"] = float(state.time)
    galaxies = state.meta.get("galaxies")
    for kind in range(6):
        pick = np.flatnonzero(kinds == kind)
        if not len(pick):
            continue
        g = f.create_group(f"PartType{kind}")
        for name, key in _DATASETS:
            data = g.create_dataset(name, data=arrays[key][pick])
            hdf5_units.annotate(data, key, cgs)
            _eagle(data, key)
        for name, (key, dtype) in TAGS.items():
            if key == "radius" and not state.has_radius:
                continue
            values = np.asarray(getattr(state, key)[pick], dtype)
            if key == "radius":
                values = values * units.length_kpc
            tag = g.create_dataset(name, data=values)
            hdf5_units.annotate(tag, key, cgs)
            _eagle(tag, key)
        g["GalaxyviewComponent"].attrs["names"] = hdf5_units.names(hdf5_units.COMPONENT_NAMES)
        if galaxies:
            g["GalaxyviewGalaxy"].attrs["names"] = hdf5_units.names(galaxies)


_EAGLE = {"pos": ("U_L", 0), "radius": ("U_L", 0), "vel": ("U_V", 2), "mass": ("U_M", 1)}


def _eagle(dataset, key: str) -> None:
    """EAGLE's unit attributes, from which pynbody takes the units of a Gadget HDF5 array."""
    unit, k = _EAGLE.get(key, ("[ - ]", None))
    a = dataset.attrs
    a["VarDescription"] = unit
    a["CGSConversionFactor"] = 1.0 if k is None else hdf5_units.GADGET_CGS[k]
    a["aexp-scale-exponent"] = a["h-scale-exponent"] = 0.0
