"""Plummer sphere (Aarseth, Henon & Wielen 1974 sampling) in Henon units: M = 1, E = -1/4."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from galaxyview.model.ics import register
from galaxyview.model.ics.parts import Block, PartMaker, centred
from galaxyview.model.state import Component, ParticleState

HENON_SCALE = 3.0 * np.pi / 16.0  # Plummer scale length a in Henon units (virial radius 1)


def plummer_sphere(n: int, rng: np.random.Generator, mass: float = 1.0, scale: float = 1.0,
                   mass_cut: float = 0.999, component: int = Component.STAR) -> ParticleState:
    """n equal-mass particles of a virialised Plummer sphere, centred, at rest.

    With mass = scale = 1 the sphere is in Henon units (virial radius 1, E = -1/4);
    `scale` multiplies lengths (virial radius) and velocities follow sqrt(mass/scale).
    mass_cut drops the outermost 0.1% of the mass (the long radial tail).
    """
    if n < 1:
        raise ValueError(f"a Plummer sphere needs n >= 1 particles, got {n}")
    pos, vel = _draw(n, rng, mass, scale, mass_cut)
    pos -= pos.mean(axis=0)
    vel -= vel.mean(axis=0)
    masses = np.full(n, mass / n)
    return ParticleState(pos, vel, masses, np.full(n, component, dtype=np.uint8))


@dataclass(frozen=True)
class PlummerParts(PartMaker):
    """plummer_sphere's model made in parts (parts.py): any range of its n particles alone
    (a distributed engine's share), the same particles whatever the ranges; `whole()` all of
    them, centred."""

    n: int
    seed: int = 1
    mass: float = 1.0
    scale: float = 1.0
    meta: dict = field(default_factory=dict)
    center: tuple = (0.0, 0.0, 0.0)
    velocity: tuple = (0.0, 0.0, 0.0)

    def blocks(self) -> list[Block]:
        return [Block(self.n, (), self._draw)]

    def finish(self, state: ParticleState, total: np.ndarray) -> ParticleState:
        state = centred(state, total)
        state.pos += np.asarray(self.center, np.float32)
        state.vel += np.asarray(self.velocity, np.float32)
        return state

    def _draw(self, count: int, rng: np.random.Generator) -> ParticleState:
        pos, vel = _draw(count, rng, self.mass, self.scale)
        return ParticleState(pos, vel, np.full(count, self.mass / self.n),
                             np.full(count, Component.STAR, np.uint8))


def _draw(n: int, rng: np.random.Generator, mass: float, scale: float,
          mass_cut: float = 0.999) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities (float64, not centred) of n particles of a Plummer sphere of
    total mass `mass` and virial radius `scale`."""
    # radii from the cumulative mass m(r) = r^3 (1 + r^2)^(-3/2), a = 1
    m = rng.uniform(0.0, mass_cut, n)
    r = 1.0 / np.sqrt(m ** (-2.0 / 3.0) - 1.0)
    pos = _isotropic(r, rng)
    # speeds: q = v / v_esc from g(q) = q^2 (1 - q^2)^(7/2) by rejection
    q = np.empty(n)
    todo = np.arange(n)
    while todo.size:
        x = rng.uniform(0.0, 1.0, todo.size)
        y = rng.uniform(0.0, 0.1, todo.size)
        ok = y < x * x * (1.0 - x * x) ** 3.5
        q[todo[ok]] = x[ok]
        todo = todo[~ok]
    v_esc = np.sqrt(2.0) * (1.0 + r * r) ** -0.25
    vel = _isotropic(q * v_esc, rng)
    # to Henon units, then to the requested mass and size
    pos *= HENON_SCALE * scale
    vel *= np.sqrt(mass / (HENON_SCALE * scale))
    return pos, vel


def _isotropic(length: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Vectors of the given lengths pointing in uniformly random directions."""
    cos_t = rng.uniform(-1.0, 1.0, length.size)
    phi = rng.uniform(0.0, 2.0 * np.pi, length.size)
    sin_t = np.sqrt(1.0 - cos_t * cos_t)
    return length[:, None] * np.stack(
        [sin_t * np.cos(phi), sin_t * np.sin(phi), cos_t], axis=1)


# -- scene model "plummer" ----------------------------------------------------------------------
@dataclass(frozen=True)
class PlummerConfig:
    """A Plummer sphere in N-body units: total mass, virial radius, centre and bulk velocity."""

    mass: float = 1.0
    radius: float = 1.0
    center: tuple = (0.0, 0.0, 0.0)
    velocity: tuple = (0.0, 0.0, 0.0)


def parse(table, units) -> PlummerConfig:
    """Keys (all optional): mass, radius (virial radius), center [3], velocity [3]; in the
    scene's units (1e10 Msun, kpc, km/s) when it has [units], else N-body (Henon) units."""
    mass = table.number("mass", 1.0, lo=0, lo_open=True)
    radius = table.number("radius", 1.0, lo=0, lo_open=True)
    center = table.vector("center", [0.0, 0.0, 0.0])
    velocity = table.vector("velocity", [0.0, 0.0, 0.0])
    table.finish()
    if units is not None:
        mass, radius = units.mass(mass * 1e10), units.length(radius)
        center = [units.length(x) for x in center]
        velocity = [units.velocity(v) for v in velocity]
    return PlummerConfig(mass, radius, tuple(center), tuple(velocity))


def build(config: PlummerConfig, n: int, rng: np.random.Generator) -> ParticleState:
    state = plummer_sphere(n, rng, mass=config.mass, scale=config.radius)
    state.pos += np.asarray(config.center, np.float32)
    state.vel += np.asarray(config.velocity, np.float32)
    return state


def maker(config: PlummerConfig, n: int, seed: int, meta: dict) -> PlummerParts:
    return PlummerParts(n, seed, config.mass, config.radius, dict(meta), config.center,
                        config.velocity)


register("plummer", parse, build, "Plummer sphere in virial equilibrium (star cluster)",
         maker=maker)
