"""Cold collapse: a uniform-density sphere released with little or no velocity dispersion.

It falls in on the free-fall time t_ff = (pi/2) sqrt(R^3 / (2 G M)) (1.11 for M = R = 1), bounces
off the softened centre and settles into a core-halo system.
q_vir = K / |W| is the initial virial ratio (0 = at rest, 0.5 = virial equilibrium), W being the
unsoftened potential energy the sample has on average, -(3/5) (1 - 1/n) G M^2 / R.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from galaxyview.model.ics import register
from galaxyview.model.ics.plummer import _isotropic
from galaxyview.model.state import Component, ParticleState


@dataclass(frozen=True)
class ColdCollapseConfig:
    """Mass, radius (N-body units) and initial virial ratio of the sphere."""

    mass: float = 1.0
    radius: float = 1.0
    q_vir: float = 0.0


def potential_energy(mass: float, radius: float, n: int) -> float:
    """Expected potential energy W of n equal masses drawn uniformly in a sphere (G = 1)."""
    return -0.6 * (1.0 - 1.0 / n) * mass * mass / radius


def uniform_sphere(n: int, rng: np.random.Generator, mass: float = 1.0, radius: float = 1.0,
                   q_vir: float = 0.0) -> ParticleState:
    """n equal masses uniform in a sphere, centred, with isotropic Gaussian velocities scaled so
    that K / |W| = q_vir exactly for the expected W (no bulk motion)."""
    pos = _isotropic(radius * rng.uniform(0.0, 1.0, n) ** (1.0 / 3.0), rng)
    vel = rng.standard_normal((n, 3))  # drawn for every q_vir: positions do not depend on it
    pos -= pos.mean(axis=0)
    vel -= vel.mean(axis=0)
    kinetic = 0.5 * (mass / n) * float((vel * vel).sum())
    wanted = q_vir * -potential_energy(mass, radius, n)
    vel *= np.sqrt(wanted / kinetic) if kinetic > 0 else 0.0
    return ParticleState(pos, vel, np.full(n, mass / n), np.full(n, Component.STAR, np.uint8))


def parse(table, units) -> ColdCollapseConfig:
    """Keys (all optional): mass, radius (in 1e10 Msun and kpc when the scene has [units]),
    q_vir in [0, 1)."""
    mass = table.number("mass", 1.0, lo=0, lo_open=True)
    radius = table.number("radius", 1.0, lo=0, lo_open=True)
    q_vir = table.number("q_vir", 0.0)
    if not 0.0 <= q_vir < 1.0:
        raise table.error("q_vir", q_vir, "must be in [0, 1): 0 starts at rest, 0.5 is virial "
                          "equilibrium, 1 and above would be unbound")
    table.finish()
    if units is not None:
        mass, radius = units.mass(mass * 1e10), units.length(radius)
    return ColdCollapseConfig(mass, radius, q_vir)


def build(config: ColdCollapseConfig, n: int, rng: np.random.Generator) -> ParticleState:
    return uniform_sphere(n, rng, config.mass, config.radius, config.q_vir)


register("cold_collapse", parse, build,
         "uniform sphere released cold (virial ratio q_vir): collapses and bounces")
