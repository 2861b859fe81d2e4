"""A galaxy read from a snapshot file (made by agama, GalIC, MakeNewDisk, galaxyview, ...) for an
encounter: converted into the scene's units, centred on its centre of mass or its densest
region, at rest; the encounter then turns it and puts it on its orbit as a generated one.

Scene keys, in a [[model.galaxy]] table instead of the disk_galaxy keys:
  file = "path"            any snapshot galaxyview reads, relative to the scene file's folder
  centre = "mass"          or "density" (shrinking spheres: the densest region's centre and
                           the mean velocity there)
  [model.galaxy.units]     optional: the file's own units (G = 1) where it states none or
                           states them wrongly: length_kpc, mass_1e10msun
The file's z axis is taken as the disk's spin axis (inclination and omega turn it).

model imports no snapshot reader (docs/architecture.md): `galaxyview.snapshots` hands its
reader in with `set_loader` when it is imported; the file is read when the particles are
first needed.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable

import numpy as np

from galaxyview.errors import GalaxyviewError, ParameterError
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem

CENTRES = ("mass", "density")
# shrinking spheres (Power et al. 2003): each sphere 10% smaller, down to this many particles
SHRINK, CORE_MIN, CORE_FRACTION = 0.9, 100, 0.01
PROFILE_POINTS = 512

Loader = Callable[[Path], "tuple[ParticleState, UnitSystem | None]"]
_loader: Loader | None = None


def set_loader(load: Loader) -> None:
    """The reader of snapshot files: load(path) -> (state, its units or None)."""
    global _loader
    _loader = load


@dataclass(frozen=True)
class Profile:
    """A galaxy's spherically averaged mass and potential (what orbit.mutual_potential uses
    of an Equilibrium): radii r, enclosed mass m_all and potential phi (N-body units)."""

    r: np.ndarray
    m_all: np.ndarray
    phi: np.ndarray


@dataclass(frozen=True)
class FileGalaxy:
    """A galaxy from snapshot `path` in the scene's `units` (N-body units: a UnitSystem),
    `file_units` overriding the file's own, centred by `centre`."""

    path: Path
    units: UnitSystem
    centre: str = "mass"
    file_units: UnitSystem | None = None
    name: str = "galaxy"

    @cached_property
    def particles(self) -> ParticleState:
        """The file's particles in the scene's N-body units, centred and at rest."""
        if _loader is None:
            raise GalaxyviewError(f"{self.path}: reading a galaxy from a file needs "
                                  f"galaxyview.snapshots (import it before building the scene)")
        state, own = _loader(self.path)
        units = self.file_units or own
        pos, vel = state.pos.astype(np.float64), state.vel.astype(np.float64)
        mass = state.mass.astype(np.float64)
        length = 1.0
        if units is not None:
            length = units.length_kpc / self.units.length_kpc
            pos *= length
            vel *= units.velocity_kms / self.units.velocity_kms
            mass *= units.mass_msun / self.units.mass_msun
        if not mass.sum() > 0:
            raise ParameterError(f"{self.path}: the galaxy's particles have no mass")
        x, v = (centre_of_mass if self.centre == "mass" else densest_centre)(pos, vel, mass)
        try:
            return ParticleState(pos - x, vel - v, mass, state.component, None,
                                 radius=state.radius * length)
        except GalaxyviewError as exc:  # (values beyond float32 in the scene's units)
            raise ParameterError(f"{self.path}: in the scene's units: {exc}") from None

    @property
    def n(self) -> int:
        return self.particles.n

    @property
    def total_mass(self) -> float:
        return float(self.particles.mass.sum(dtype=np.float64))

    def equilibrium(self) -> Profile:
        return profile(self.particles)

    def build(self, index: int) -> ParticleState:
        """The particles as galaxy `index` of the scene."""
        s = self.particles.copy()
        s.galaxy[:] = index
        return s


def parse_file_galaxy(table, units: UnitSystem, name: str) -> FileGalaxy:
    """The file keys of a [[model.galaxy]] table (not finished: callers read more keys)."""
    given = table.string("file")
    path = Path(given).expanduser()
    if not path.is_absolute():
        path = Path(table.source).parent / path
    if not path.is_file():
        raise table.error("file", given, f"no such file ({path}); a path is relative to the "
                                         f"scene file's folder")
    centre = table.string("centre", "mass", choices=CENTRES)
    file_units = None
    if (t := table.table("units", None)) is not None:
        length = t.number("length_kpc", 1.0, lo=0, lo_open=True)
        mass = t.number("mass_1e10msun", 1.0, lo=0, lo_open=True)
        t.finish()
        file_units = UnitSystem(length, mass * 1e10)
    return FileGalaxy(path, units, centre, file_units, name)


def centre_of_mass(pos, vel, mass) -> tuple[np.ndarray, np.ndarray]:
    return mass @ pos / mass.sum(), mass @ vel / mass.sum()


def densest_centre(pos, vel, mass) -> tuple[np.ndarray, np.ndarray]:
    """The centre of the densest region by shrinking spheres, and the mean velocity of the
    particles in the last sphere."""
    centre, _ = centre_of_mass(pos, vel, mass)
    radius = float(np.linalg.norm(pos - centre, axis=1).max())
    least = max(CORE_MIN, int(CORE_FRACTION * len(mass)))
    inside = np.ones(len(mass), dtype=bool)
    while True:
        radius *= SHRINK
        pick = np.linalg.norm(pos - centre, axis=1) < radius
        if pick.sum() < least or not mass[pick].sum() > 0:
            break
        inside = pick
        centre = mass[pick] @ pos[pick] / mass[pick].sum()
    return centre, mass[inside] @ vel[inside] / mass[inside].sum()


def profile(state: ParticleState) -> Profile:
    """The spherically averaged mass and potential of centred particles:
    phi(r) = -M(<r)/r - sum over particles beyond r of m/r_j."""
    r = np.linalg.norm(state.pos.astype(np.float64), axis=1)
    order = np.argsort(r)
    r, m = r[order], state.mass.astype(np.float64)[order]
    r_safe = np.maximum(r, 1e-12 * max(r[-1], 1e-30))
    outside = np.concatenate([np.cumsum((m / r_safe)[::-1])[::-1][1:], [0.0]])
    grid = np.geomspace(max(r_safe[min(len(r) - 1, 1)], 1e-6 * r_safe[-1]), r_safe[-1],
                        PROFILE_POINTS)
    k = np.searchsorted(r, grid, side="right") - 1  # the last particle inside each radius
    enclosed = np.where(k >= 0, np.cumsum(m)[np.maximum(k, 0)], 0.0)
    beyond = np.where(k >= 0, outside[np.maximum(k, 0)], outside[0] + m[0] / r_safe[0])
    return Profile(grid, enclosed, -enclosed / grid - beyond)
