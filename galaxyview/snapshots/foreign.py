"""Whatever pynbody can load (an optional extra: pip install galaxyview[formats]), with its
units converted: lengths to kpc, masses to Msun, velocities to km/s, then to N-body units
with the unit system 1 kpc, 1e10 Msun. Families: dm -> HALO, star -> DISK, gas -> STAR."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.model.finite import NonFiniteError
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import UnitSystem


def available() -> bool:
    try:
        import pynbody  # noqa: F401
    except ImportError:
        return False
    return True


def read(path) -> tuple[ParticleState, UnitSystem | None, dict]:
    """(state, units or None when the file has none, notes); SnapshotError when pynbody
    cannot load it."""
    import pynbody

    path = Path(path)
    try:
        sim = pynbody.load(str(path))
    except Exception as exc:  # noqa: BLE001 - pynbody raises many kinds for unknown files
        raise SnapshotError(f"{path}: not a format galaxyview knows, and pynbody cannot "
                            f"read it either ({exc})") from None
    try:
        state, units = _convert(sim, path)
    except GalaxyviewError:
        raise
    except MemoryError:
        raise SnapshotError(f"{path}: out of memory while pynbody reads it as "
                            f"{type(sim).__name__}; its header may promise more particles than "
                            f"the file holds (corrupt), or it is too large for this "
                            f"machine") from None
    except Exception as exc:  # noqa: BLE001 - pynbody's errors on a damaged file vary
        raise SnapshotError(f"{path}: pynbody takes it for {type(sim).__name__} but cannot read "
                            f"it ({type(exc).__name__}: {exc}); the file is damaged or "
                            f"incomplete") from None
    return state, units, {"pynbody_class": type(sim).__name__}


def _convert(sim, path: Path) -> tuple[ParticleState, UnitSystem | None]:
    """The particles of pynbody snapshot `sim` (pynbody loads them here, lazily)."""
    comps = {"dm": Component.HALO, "star": Component.DISK, "gas": Component.STAR}
    parts, component = [], []
    for family in sim.families():
        sub = sim[family]
        parts.append(sub)
        component.append(np.full(len(sub), comps.get(family.name, Component.STAR), np.uint8))
    try:
        pos, vel, mass = (np.concatenate([p[k].in_units(u) for p in parts]) for k, u in
                          (("pos", "kpc"), ("vel", "km s**-1"), ("mass", "Msol")))
        units = UnitSystem()  # kpc and 1e10 Msun
        vel = vel / units.velocity_kms
        mass = mass / units.mass_msun
        time = float(sim.properties["time"].in_units("Myr")) / units.time_myr
    except Exception:  # noqa: BLE001 - no physical units: take the numbers as they are
        pos, vel, mass = (np.concatenate([np.asarray(p[k]) for p in parts])
                          for k in ("pos", "vel", "mass"))
        units, time = None, 0.0
    try:
        state = ParticleState(pos, vel, mass, np.concatenate(component), time=time)
    except NonFiniteError as exc:
        raise exc.in_file(path) from None
    except GalaxyviewError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    return state, units
