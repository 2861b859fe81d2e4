"""Encounters: two or more disk galaxies on Kepler orbits, each disk oriented on its own.

Scene keys (lengths in kpc, angles in degrees; docs/galaxy-models.md has examples):
  [model]  type = "encounter", pericentre, separation (initial), eccentricity (1 = parabolic),
           orbit ("extended" | "point-mass", see galaxyview/model/ics/orbit.py)
  [[model.galaxy]]  the disk_galaxy keys plus name, inclination, omega;
                    or, for a galaxy made elsewhere, file = "snapshot" (from_file.py);
                    from the third galaxy on also its own orbit: pericentre, separation,
                    eccentricity, orbit_angle (about the companion group's centre of mass)
The first two galaxies follow the [model] orbit; galaxy k >= 2 joins the centre of mass of
galaxies 0..k-1 on its own orbit. All orbits lie in the x-y plane with angular momentum +z.
Orientation (Toomre & Toomre 1972): inclination i of the disk to the orbital plane (0 prograde,
180 retrograde) and argument of pericentre omega, measured in the orbital plane from the line of
nodes to the pericentre direction (this galaxy to its companion).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from galaxyview.errors import ParameterError
from galaxyview.model.ics import kepler, register
from galaxyview.model.ics.from_file import FileGalaxy, parse_file_galaxy
from galaxyview.model.ics.galaxy import (GalaxyConfig, build_galaxy, galaxy_blocks,
                                         galaxy_counts, parse_galaxy)
from galaxyview.model.ics.orbit import RelativeOrbit, mutual_potential
from galaxyview.model.ics.parts import Block, PartMaker
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem


@dataclass(frozen=True)
class Orbit:
    """Kepler orbit of a galaxy about its companion (N-body units); angle rotates it about z."""

    pericentre: float
    eccentricity: float
    separation: float
    angle: float = 0.0


@dataclass(frozen=True)
class Member:
    galaxy: GalaxyConfig | FileGalaxy
    inclination: float  # radians
    omega: float  # radians
    orbit: Orbit | None  # None for the first galaxy


@dataclass(frozen=True)
class EncounterConfig:
    members: tuple
    extended: bool = True  # orbits corrected for the galaxies' extended mass


def parse_orbit(table, units: UnitSystem, angle: bool = False) -> Orbit:
    """pericentre, separation (kpc), eccentricity (> 0; 1 = parabolic, the default) and, with
    `angle`, orbit_angle (degrees) from `table`."""
    q = table.number("pericentre", lo=0, lo_open=True)
    e = table.number("eccentricity", 1.0, lo=0, lo_open=True, hi=100.0)
    r0 = table.number("separation", lo=0, lo_open=True)
    why = kepler.check_orbit(q, e, r0)
    if why is not None:
        raise table.error("separation", r0, why)
    phi = math.radians(table.number("orbit_angle", 0.0, lo=-360.0, hi=360.0)) if angle else 0.0
    return Orbit(units.length(q), e, units.length(r0), phi)


def parse(table, units) -> EncounterConfig:
    u = units or UnitSystem()
    orbit = parse_orbit(table, u)
    mode = table.string("orbit", "extended", choices=("extended", "point-mass"))
    galaxies = table.tables("galaxy")
    if len(galaxies) < 2:
        raise table.error("galaxy", len(galaxies), "an encounter needs at least two "
                          "[[model.galaxy]] tables")
    members = []
    for k, t in enumerate(galaxies):
        name = t.string("name", f"galaxy {k}")
        config = (parse_file_galaxy(t, u, name) if "file" in t.data else
                  parse_galaxy(t, u, name))
        inclination = math.radians(t.number("inclination", 0.0, lo=-180.0, hi=180.0))
        omega = math.radians(t.number("omega", 0.0, lo=-360.0, hi=360.0))
        own = parse_orbit(t, u, angle=True) if k >= 2 else (orbit if k == 1 else None)
        t.finish()
        members.append(Member(config, inclination, omega, own))
    table.finish()
    return EncounterConfig(tuple(members), mode == "extended")


def disk_rotation(inclination: float, omega: float, pericentre_dir: np.ndarray) -> np.ndarray:
    """Rotation taking a disk with spin +z to inclination i and argument of pericentre omega
    for a companion whose pericentre lies along pericentre_dir (a unit vector in the x-y plane)."""
    p = math.atan2(pericentre_dir[1], pericentre_dir[0])
    node = np.array([math.cos(p - omega), math.sin(p - omega), 0.0])  # ascending node
    return _axis_rotation(node, -inclination)


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' rotation matrix (column vectors): v -> R @ v."""
    k = axis / np.linalg.norm(axis)
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * cross + (1 - math.cos(angle)) * cross @ cross


def orbits(config: EncounterConfig, tables: list) -> list[RelativeOrbit]:
    """The relative orbit of galaxy k >= 1 about the centre of mass of galaxies 0..k-1."""
    out = []
    for k in range(1, len(config.members)):
        orb = config.members[k].orbit
        group_mass = sum(m.galaxy.total_mass for m in config.members[:k])
        mass = group_mass + config.members[k].galaxy.total_mass
        potential = (mutual_potential(tables[:k], tables[k], 1.01 * orb.separation)
                     if config.extended else None)
        try:
            out.append(RelativeOrbit(mass, orb.pericentre, orb.eccentricity, orb.separation,
                                     potential))
        except ValueError as exc:
            raise ParameterError(f"galaxy {k} ({config.members[k].galaxy.name}): {exc}; start "
                                 f"farther apart or use orbit = \"point-mass\"") from None
    return out


def layout(config: EncounterConfig, relative: list[RelativeOrbit]):
    """Centre positions and velocities of the galaxies (centre of mass at rest at the origin)
    and each galaxy's pericentre direction (towards its companion)."""
    members = config.members
    pos, vel, peri = [np.zeros(3)], [np.zeros(3)], [None]
    group_mass = members[0].galaxy.total_mass
    for k in range(1, len(members)):
        m = members[k].galaxy.total_mass
        total = group_mass + m
        turn = _axis_rotation(np.array([0.0, 0.0, 1.0]), members[k].orbit.angle)
        r, v = turn @ relative[k - 1].pos, turn @ relative[k - 1].vel
        for i in range(k):  # the group moves against the newcomer about the common centre
            pos[i] = pos[i] - m / total * r
            vel[i] = vel[i] - m / total * v
        pos.append(group_mass / total * r)
        vel.append(group_mass / total * v)
        peri.append(-turn @ np.array([1.0, 0.0, 0.0]))
        if k == 1:
            peri[0] = -peri[1]
        group_mass = total
    return pos, vel, peri


def _setup(config: EncounterConfig, n: int):
    """What build and EncounterParts share: the particles per galaxy and component, the
    galaxies' equilibrium tables, their relative orbits, and per galaxy place(pos, vel):
    its disk's rotation and its place on the orbit (float64)."""
    members = config.members
    counts = _counts([m.galaxy for m in members], n)
    tables = [m.galaxy.equilibrium() for m in members]
    relative = orbits(config, tables)
    centres, velocities, peri = layout(config, relative)
    places = []
    for k, member in enumerate(members):
        rot = disk_rotation(member.inclination, member.omega, peri[k])

        def place(pos, vel, rot=rot, x=centres[k], v=velocities[k]):
            return pos @ rot.T + x, vel @ rot.T + v
        places.append(place)
    return counts, tables, relative, places


def _counts(galaxies: list, n: int) -> list:
    """Particles per component of each generated galaxy (None for one from a file, whose
    particles are the file's): n less the files' particles, shared out by mass."""
    fixed = sum(g.n for g in galaxies if isinstance(g, FileGalaxy))
    made = [g for g in galaxies if not isinstance(g, FileGalaxy)]
    if made and n - fixed < 1:
        raise ParameterError(f"{n} particles are too few: the galaxies from files hold "
                             f"{fixed}; ask for more (--n), the generated galaxies get the rest")
    shares = iter(galaxy_counts(made, n - fixed) if made else [])
    return [None if isinstance(g, FileGalaxy) else next(shares) for g in galaxies]


def _meta(config: EncounterConfig, relative: list[RelativeOrbit]) -> dict:
    return {"galaxies": [m.galaxy.name for m in config.members],
            "t_pericentre": [o.time_to_pericentre for o in relative]}


def build(config: EncounterConfig, n: int, rng: np.random.Generator) -> ParticleState:
    counts, tables, relative, places = _setup(config, n)
    states = []
    for k, member in enumerate(config.members):
        s = (member.galaxy.build(k) if isinstance(member.galaxy, FileGalaxy) else
             build_galaxy(member.galaxy, counts[k], rng, index=k, eq=tables[k]))
        pos, vel = places[k](s.pos.astype(float), s.vel.astype(float))
        s.pos, s.vel = pos.astype(np.float32), vel.astype(np.float32)
        states.append(s)
    state = ParticleState.concatenate(states)
    state.meta.update(_meta(config, relative))
    return state


@dataclass(frozen=True)
class EncounterParts(PartMaker):
    """`build`'s encounter made in parts: each galaxy's components as blocks (galaxy_blocks),
    rotated and put on its orbit particle by particle. `meta`: the scene's, and the
    galaxies' names and times to pericentre."""

    config: EncounterConfig
    n: int
    seed: int
    scene_meta: dict = field(default_factory=dict)

    @cached_property
    def _setup(self):
        return _setup(self.config, self.n)

    def __getstate__(self) -> dict:  # sent to the other processes without the setup
        return {k: v for k, v in self.__dict__.items() if k != "_setup"}

    @property
    def meta(self) -> dict:
        return {**self.scene_meta, **_meta(self.config, self._setup[2])}

    def blocks(self) -> list[Block]:
        counts, tables, _, places = self._setup
        return [block for k, member in enumerate(self.config.members)
                for block in galaxy_blocks(member.galaxy, counts[k], k, tables[k], places[k])]


def maker(config: EncounterConfig, n: int, seed: int, meta: dict) -> EncounterParts | None:
    """None with a galaxy from a file (its particles are read whole, not drawn in parts)."""
    if any(isinstance(m.galaxy, FileGalaxy) for m in config.members):
        return None
    return EncounterParts(config, n, seed, dict(meta))


register("encounter", parse, build,
         "two or more disk galaxies on Kepler orbits, each disk oriented on its own",
         maker=maker)
