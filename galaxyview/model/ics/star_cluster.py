"""Star clusters for direct N-body (Hermite): a Plummer sphere of stars with equal masses or
masses from Kroupa's (2001) initial mass function, in physical units (Msun, pc)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from galaxyview.model.ics import register
from galaxyview.model.ics.plummer import plummer_sphere

# Kroupa (2001): dN/dm ~ m^-alpha, alpha = 1.3 below 0.5 Msun and 2.3 above
KROUPA_BREAK = 0.5
KROUPA_ALPHA = (1.3, 2.3)
IMFS = ("equal", "kroupa")


def kroupa_masses(n: int, rng: np.random.Generator, m_min: float = 0.1,
                  m_max: float = 100.0) -> np.ndarray:
    """n stellar masses (Msun) from Kroupa's IMF between m_min and m_max, by inverting the
    cumulative distribution of each power-law segment."""
    edges = [(m_min, min(KROUPA_BREAK, m_max), KROUPA_ALPHA[0]),
             (max(KROUPA_BREAK, m_min), m_max, KROUPA_ALPHA[1])]
    segs = [(a, b, al) for a, b, al in edges if b > a]
    # continuity at the break: k2 = k1 * m_break^(alpha2 - alpha1)
    norm = {KROUPA_ALPHA[0]: 1.0, KROUPA_ALPHA[1]: KROUPA_BREAK ** (KROUPA_ALPHA[1] - KROUPA_ALPHA[0])}
    weights = np.array([norm[al] * (b ** (1 - al) - a ** (1 - al)) / (1 - al) for a, b, al in segs])
    which = rng.choice(len(segs), size=n, p=weights / weights.sum())
    u = rng.uniform(0.0, 1.0, n)
    out = np.empty(n)
    for k, (a, b, al) in enumerate(segs):
        pick = which == k
        lo, hi = a ** (1 - al), b ** (1 - al)
        out[pick] = (lo + u[pick] * (hi - lo)) ** (1 / (1 - al))
    return out


@dataclass(frozen=True)
class ClusterConfig:
    imf: str = "equal"
    mass: float = 1.0  # total (equal masses), N-body units
    m_min: float = 0.1  # Kroupa range, Msun
    m_max: float = 100.0
    radius: float = 1.0  # virial radius, N-body units
    msun: float = 1.0  # one Msun in N-body mass units


def parse(table, units) -> ClusterConfig:
    """Keys: imf ("equal" or "kroupa"); mass (total, equal masses); m_min, m_max (Kroupa, in
    Msun: the IMF needs the scene's [units]); radius (virial radius). In Msun and pc when the
    scene has [units], else N-body units."""
    imf = table.string("imf", "equal", choices=IMFS)
    mass = table.number("mass", 1.0, lo=0, lo_open=True)
    m_min = table.number("m_min", 0.1, lo=0, lo_open=True)
    m_max = table.number("m_max", 100.0, lo=0, lo_open=True)
    radius = table.number("radius", 1.0, lo=0, lo_open=True)
    if m_max <= m_min:
        raise table.error("m_max", m_max, f"must be above m_min ({m_min:g})")
    if imf == "kroupa" and units is None:
        raise table.error("imf", imf, "the Kroupa IMF is in Msun: give the scene [units] "
                                      "(length_pc, mass_msun)")
    table.finish()
    msun = 1.0
    if units is not None:
        mass, radius, msun = units.mass(mass), units.length(radius * 1e-3), units.mass(1.0)
    return ClusterConfig(imf, mass, m_min, m_max, radius, msun)


def build(config: ClusterConfig, n: int, rng: np.random.Generator):
    """Plummer positions and velocities for the cluster's total mass; with Kroupa masses the
    stars get masses independent of their orbits (no mass segregation at the start)."""
    if config.imf == "equal":
        return plummer_sphere(n, rng, mass=config.mass, scale=config.radius)
    masses = kroupa_masses(n, rng, config.m_min, config.m_max) * config.msun
    state = plummer_sphere(n, rng, mass=float(masses.sum()), scale=config.radius)
    state.mass = masses.astype(np.float32)
    state.validate()
    return state


register("star_cluster", parse, build,
         "star cluster: Plummer sphere with equal masses or a Kroupa IMF (direct N-body)")
