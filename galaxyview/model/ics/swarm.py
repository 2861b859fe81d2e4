"""Minor-merger swarm: a primary disk galaxy and K satellites of 1/k its mass each.

The satellites' centres are a Plummer realisation of K points scaled to the virial radius R
(without the outermost 10% of the Plummer mass: no satellite starts beyond 2.2 R);
their bulk velocities are scaled so that the swarm's virial ratio K/|W| equals q_vir (0.5 is
virial equilibrium, smaller falls in faster), W counting the satellites as point masses in the
primary's (spherically averaged) potential and in each other's.
Scene keys (kpc, 1e10 Msun):
  [model]             type = "swarm", virial_radius, q_vir
  [model.primary]     the disk_galaxy keys
  [model.satellites]  count, mass_ratio (k), radius (each satellite's virial radius: a Plummer
                      sphere), weight (particles per unit mass relative to the primary's halo)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from galaxyview.model.ics import register
from galaxyview.model.ics.galaxy import (GalaxyConfig, build_galaxy, galaxy_parts, parse_galaxy,
                                         split_counts)
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import UnitSystem


@dataclass(frozen=True)
class SwarmConfig:
    primary: GalaxyConfig
    count: int
    mass_ratio: float
    satellite_radius: float
    weight: float
    virial_radius: float
    q_vir: float

    @property
    def satellite_mass(self) -> float:
        return self.primary.total_mass / self.mass_ratio


def parse(table, units) -> SwarmConfig:
    u = units or UnitSystem()
    radius = u.length(table.number("virial_radius", lo=0, lo_open=True))
    q_vir = table.number("q_vir", 0.5, lo=0.0, hi=1.0, hi_open=True)
    t = table.table("primary")
    primary = parse_galaxy(t, u, "primary")
    t.finish()
    s = table.table("satellites")
    count = s.integer("count", lo=1, hi=1000)
    ratio = s.number("mass_ratio", lo=1.0, hi=1e6)
    sat_radius = u.length(s.number("radius", lo=0, lo_open=True))
    weight = s.number("weight", 1.0, lo=0, lo_open=True, hi=1e4)
    s.finish()
    table.finish()
    return SwarmConfig(primary, count, ratio, sat_radius, weight, radius, q_vir)


def satellite_orbits(config: SwarmConfig, rng: np.random.Generator):
    """Positions and velocities (K, 3) of the satellites' centres relative to the primary at
    rest at the origin: a Plummer realisation scaled to the virial radius and to q_vir."""
    k, m = config.count, config.satellite_mass
    cloud = plummer_sphere(max(k, 2), rng, mass_cut=0.9)  # Henon units: virial radius 1
    pos = cloud.pos[:k].astype(float) * config.virial_radius
    vel = cloud.vel[:k].astype(float)
    eq = config.primary.equilibrium()
    r = np.linalg.norm(pos, axis=1)
    outside = r > eq.r[-1]
    phi = np.where(outside, -eq.m_all[-1] / np.maximum(r, 1e-300), np.interp(r, eq.r, eq.phi))
    w = m * phi.sum()
    if k > 1:
        d = np.linalg.norm(pos[:, None] - pos[None, :], axis=-1)
        w -= 0.5 * m * m * (1.0 / d[~np.eye(k, dtype=bool)]).sum()
    total = config.primary.total_mass + k * m
    v_com = m * vel.sum(axis=0) / total
    kinetic = 0.5 * m * (vel * vel).sum() - 0.5 * total * (v_com @ v_com)
    vel *= np.sqrt(config.q_vir * abs(w) / kinetic) if kinetic > 0 else 0.0
    return pos, vel


def build(config: SwarmConfig, n: int, rng: np.random.Generator) -> ParticleState:
    primary = config.primary
    parts = galaxy_parts(primary)
    sat_weight = config.satellite_mass * config.weight
    labels = [f"primary {p}" for p, _ in parts] + [f"satellite {i + 1}"
                                                   for i in range(config.count)]
    counts = split_counts([w for _, w in parts] + [sat_weight] * config.count,
                          n - (primary.black_hole > 0), labels)
    states = [build_galaxy(primary, dict(zip([p for p, _ in parts], counts)), rng)]
    centres, velocities = satellite_orbits(config, rng)
    for i, n_sat in enumerate(counts[len(parts):]):
        s = plummer_sphere(n_sat, rng, mass=config.satellite_mass,
                           scale=config.satellite_radius, component=Component.SATELLITE)
        s.pos += centres[i].astype(np.float32)
        s.vel += velocities[i].astype(np.float32)
        s.galaxy[:] = i + 1
        states.append(s)
    state = ParticleState.concatenate(states)
    mass = state.mass.astype(float)
    state.pos -= (mass @ state.pos / mass.sum()).astype(np.float32)
    state.vel -= (mass @ state.vel / mass.sum()).astype(np.float32)
    state.meta["galaxies"] = ["primary"] + [f"satellite {i + 1}" for i in range(config.count)]
    return state


register("swarm", parse, build,
         "minor-merger swarm: a primary disk galaxy and K satellites placed by a Plummer sphere")
