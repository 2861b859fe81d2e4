"""Disk galaxy model: exponential disk (sech^2 vertical profile), Hernquist bulge, Hernquist or
NFW dark halo (truncated) and an optional central black-hole particle, in equilibrium.

Scene keys (masses in 1e10 Msun, lengths in kpc; docs/galaxy-models.md describes them):
  [model.disk]       mass, scale_length, scale_height, toomre_q
  [model.bulge]      mass, scale, truncation
  [model.halo]       profile ("hernquist" | "nfw"), mass, scale, truncation
  [model.black_hole] mass
  [model.particles]  disk, bulge, halo: particles per unit mass relative to equal-mass particles
  softening          the Plummer softening length (kpc) whose potential the velocities are
                     drawn in (default 0: Newtonian; jeans.py)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from galaxyview.errors import ParameterError
from galaxyview.model.ics import register
from galaxyview.model.ics.parts import Block, PartMaker
from galaxyview.model.ics.jeans import Equilibrium
from galaxyview.model.ics.plummer import _isotropic
from galaxyview.model.ics.profiles import ExponentialDisk, Spherical
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import UnitSystem

PARTS = ("disk", "bulge", "halo")


@dataclass(frozen=True)
class GalaxyConfig:
    """One galaxy in N-body units, built with its spin along +z, centred and at rest."""

    disk: ExponentialDisk | None = None
    toomre_q: float = 1.5
    bulge: Spherical | None = None
    halo: Spherical | None = None
    black_hole: float = 0.0
    weights: dict = field(default_factory=lambda: dict.fromkeys(PARTS, 1.0))
    name: str = "galaxy"
    softening: float = 0.0

    def masses(self) -> dict:
        """Mass of each component present (disk, bulge, halo) in N-body units."""
        parts = {"disk": self.disk, "bulge": self.bulge, "halo": self.halo}
        return {k: p.mass for k, p in parts.items() if p is not None}

    @property
    def total_mass(self) -> float:
        return sum(self.masses().values()) + self.black_hole

    def equilibrium(self) -> Equilibrium:
        return Equilibrium(self.disk, self.toomre_q, self.bulge, self.halo, self.black_hole,
                           self.softening)


# -- parsing -----------------------------------------------------------------------------------
def parse_galaxy(table, units: UnitSystem | None, name: str = "galaxy") -> GalaxyConfig:
    """Read the galaxy keys of `table` (not finished: callers may read more keys)."""
    u = units or UnitSystem()
    disk, bulge, halo, q = None, None, None, 1.5
    if (t := table.table("disk", None)) is not None:
        h = _length(t, "scale_length", u)
        z0 = _length(t, "scale_height", u, 0.1 * u.length_kpc * h)
        if z0 > 0.5 * h:
            raise t.error("scale_height", t.data["scale_height"],
                          "must be at most half the scale length (a thin disk)")
        disk = ExponentialDisk(_mass(t, u), h, z0)
        q = t.number("toomre_q", 1.5, lo=0.5, hi=5.0)
        t.finish()
    if (t := table.table("bulge", None)) is not None:
        bulge = _sphere(t, u, "hernquist", 20.0)
    if (t := table.table("halo", None)) is not None:
        kind = t.string("profile", "hernquist", choices=("hernquist", "nfw"))
        halo = _sphere(t, u, kind, 10.0)
    bh = 0.0
    if (t := table.table("black_hole", None)) is not None:
        bh = _mass(t, u)
        t.finish()
    if disk is None and bulge is None and halo is None:
        raise table.error("disk", None, "a galaxy needs at least one of [disk], [bulge], "
                          "[halo] (a black hole alone is not a galaxy)")
    weights = dict.fromkeys(PARTS, 1.0)
    if (t := table.table("particles", None)) is not None:
        for key in PARTS:
            weights[key] = t.number(key, 1.0, lo=0, lo_open=True, hi=1e4)
        t.finish()
    softening = u.length(table.number("softening", 0.0, lo=0.0, hi=1e6))
    return GalaxyConfig(disk, q, bulge, halo, bh, weights, name, softening)


def _mass(t, u: UnitSystem) -> float:
    """`mass` in 1e10 Msun, required, > 0; N-body units out."""
    return u.mass(1e10 * t.number("mass", lo=0, lo_open=True))


def _length(t, key: str, u: UnitSystem, default_kpc=None) -> float:
    """A length in kpc (required unless default_kpc is given), > 0; N-body units out."""
    if default_kpc is None:
        return u.length(t.number(key, lo=0, lo_open=True))
    return u.length(t.number(key, default_kpc, lo=0, lo_open=True))


def _sphere(t, u: UnitSystem, kind: str, default_cut: float) -> Spherical:
    mass, scale = _mass(t, u), _length(t, "scale", u)
    cut = _length(t, "truncation", u, default_cut * scale * u.length_kpc)
    if cut <= scale:
        raise t.error("truncation", t.data.get("truncation"),
                      f"must be larger than the scale radius ({scale * u.length_kpc:g} kpc)")
    t.finish()
    return Spherical(kind, mass, scale, cut)


def parse(table, units):
    config = parse_galaxy(table, units)
    table.finish()
    return config


# -- particle numbers --------------------------------------------------------------------------
def split_counts(weighted: list[float], n: int, labels: list[str]) -> list[int]:
    """Split n particles in proportion to `weighted` (mass x weight), largest remainder first;
    every entry gets at least one particle or a ParameterError says how many are needed."""
    share = np.asarray(weighted, dtype=float) / float(np.sum(weighted)) * n
    counts = np.floor(share).astype(int)
    order = np.argsort(-(share - counts), kind="stable")
    counts[order[: n - counts.sum()]] += 1
    if (counts < 1).any():
        least = int(np.ceil(np.max(np.sum(weighted) / np.asarray(weighted)))) + len(weighted)
        empty = labels[int(np.argmin(counts))]
        raise ParameterError(f"{n} particles are too few: the {empty} would get none; "
                             f"use at least {least} particles (--n)")
    return counts.tolist()


def galaxy_parts(config: GalaxyConfig) -> list[tuple[str, float]]:
    """(part, mass x weight) of the components that share out particles (not the black hole)."""
    return [(k, m * config.weights[k]) for k, m in config.masses().items()]


def galaxy_counts(configs: list[GalaxyConfig], n: int) -> list[dict]:
    """Particles per component for each galaxy: one per black hole, the rest by mass x weight."""
    holes = sum(1 for c in configs if c.black_hole > 0)
    parts = [(i, k, w) for i, c in enumerate(configs) for k, w in galaxy_parts(c)]
    labels = [f"{configs[i].name} {k}" for i, k, _ in parts]
    counts = split_counts([w for *_, w in parts], n - holes, labels)
    out = [dict() for _ in configs]
    for (i, k, _), c in zip(parts, counts):
        out[i][k] = c
    return out


# -- building ----------------------------------------------------------------------------------
def _components(config: GalaxyConfig, eq: Equilibrium) -> list[tuple]:
    """(key, part, mass, Component code, sample) per component of the galaxy, in build
    order: sample(count, rng) -> (pos, vel) float64, mirrored pairs; None for the black hole
    (one particle at rest at the centre)."""
    def disk(count, rng):
        R, phi, z = config.disk.sample((count + 1) // 2, rng)
        v_r, v_phi, v_z = eq.disk_velocities(R, z, rng)
        c, s = np.cos(phi), np.sin(phi)
        return _mirrored(np.stack([R * c, R * s, z], axis=1),
                         np.stack([v_r * c - v_phi * s, v_r * s + v_phi * c, v_z], axis=1),
                         count)

    def sphere(i, model):
        def sample(count, rng):
            r = model.sample_radii((count + 1) // 2, rng)
            return _mirrored(_isotropic(r, rng), eq.sphere_velocities(i, r, rng), count)
        return sample

    out = []
    if config.disk is not None:
        out.append((0, "disk", config.disk.mass, Component.DISK, disk))
    for i, (part, model) in enumerate(_spheres(config)):
        code = Component.BULGE if part == "bulge" else Component.HALO
        out.append((1 + i, part, model.mass, code, sphere(i, model)))
    if config.black_hole > 0:
        out.append((3, "black_hole", config.black_hole, Component.BLACK_HOLE, None))
    return out


def _drawn(sample, count: int, rng: np.random.Generator):
    """(pos, vel) float64 of `count` particles of a component (`_components`' sample)."""
    return sample(count, rng) if sample else (np.zeros((count, 3)), np.zeros((count, 3)))


def build_galaxy(config: GalaxyConfig, counts: dict, rng: np.random.Generator,
                 index: int = 0, eq: Equilibrium | None = None) -> ParticleState:
    """A galaxy of counts[part] particles per component (plus its black hole), spin along +z,
    centre of mass at rest at the origin; ParticleState.galaxy = index. `eq`: its tables when
    already made. Each component is drawn as mirrored pairs (x, v) and (-x, -v)."""
    pos, vel, mass, comp = [], [], [], []
    for _, part, m, code, sample in _components(config, eq or config.equilibrium()):
        n = counts.get(part, 1)
        p, v = _drawn(sample, n, rng)
        pos.append(p)
        vel.append(v)
        mass.append(np.full(n, m / n))
        comp.append(np.full(n, code))
    pos, vel, mass = np.concatenate(pos), np.concatenate(vel), np.concatenate(mass)
    pos -= mass @ pos / mass.sum()
    vel -= mass @ vel / mass.sum()
    return ParticleState(pos, vel, mass, np.concatenate(comp).astype(np.uint8),
                         np.full(len(mass), index, dtype=np.int16))


def galaxy_blocks(config: GalaxyConfig, counts: dict, index: int = 0,
                  eq: Equilibrium | None = None, place=None) -> list[Block]:
    """build_galaxy's components as blocks of a model made in parts (parts.py): the same
    distributions (each drawn as mirrored pairs chunk by chunk, so each chunk of an even
    count is centred and at rest), keys (index, component). place(pos, vel) -> (pos, vel):
    the galaxy's rotation and orbit (float64), applied to every particle."""
    def block(key: int, n: int, m: float, code: int, sample) -> Block:
        def draw(count: int, rng: np.random.Generator) -> ParticleState:
            pos, vel = _drawn(sample, count, rng)
            if place is not None:
                pos, vel = place(pos, vel)
            return ParticleState(pos, vel, np.full(count, m / n), np.full(count, code, np.uint8),
                                 np.full(count, index, np.int16))
        return Block(n, (index, key), draw)

    return [block(key, counts.get(part, 1), m, code, sample)
            for key, part, m, code, sample in _components(config, eq or config.equilibrium())]


@dataclass(frozen=True)
class GalaxyParts(PartMaker):
    """A disk galaxy (`build`'s model) made in parts."""

    config: GalaxyConfig
    n: int
    seed: int
    meta: dict = field(default_factory=dict)

    def blocks(self) -> list[Block]:
        return galaxy_blocks(self.config, galaxy_counts([self.config], self.n)[0])


def maker(config: GalaxyConfig, n: int, seed: int, meta: dict) -> GalaxyParts:
    return GalaxyParts(config, n, seed, {**meta, "galaxies": [config.name]})


def _mirrored(pos: np.ndarray, vel: np.ndarray, n: int):
    """n particles: the drawn ones and their point reflections (-x, -v), which keeps the
    component centred and at rest without dipole noise and keeps its spin."""
    return (np.concatenate([pos, -pos[: n // 2]])[:n], np.concatenate([vel, -vel[: n // 2]])[:n])


def _spheres(config: GalaxyConfig):
    return [(k, s) for k, s in (("bulge", config.bulge), ("halo", config.halo)) if s is not None]


def build(config: GalaxyConfig, n: int, rng: np.random.Generator) -> ParticleState:
    state = build_galaxy(config, galaxy_counts([config], n)[0], rng)
    state.meta["galaxies"] = [config.name]
    return state


register("disk_galaxy", parse, build,
         "disk galaxy: exponential disk, Hernquist bulge, Hernquist/NFW halo, black hole",
         maker=maker)
