"""A patch of a planetary ring in the shearing sheet (model/sheet.py), in SI units.

Icy spheres of radii drawn from dn/dr ~ r^-p on [r_min, r_max] (one radius when equal), of
bulk density rho, fill a box whose area follows from N and the optical depth
tau = N pi <r^2> / (Lx Ly) (or the surface density Sigma = N <m> / (Lx Ly)). They start
on their guiding centres (v_y = -3/2 Omega x) with random velocities of dispersion
`dispersion` x <r> Omega, in a layer of Gaussian thickness, without overlaps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from galaxyview.errors import SceneError
from galaxyview.model import collide
from galaxyview.model.ics import register
from galaxyview.model.sheet import GHOSTS_MAX, RESTITUTION_LAWS, Sheet
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import G_SI

PLACE_TRIES = 200  # rounds of re-drawing overlapping particles


@dataclass(frozen=True)
class RingConfig:
    omega: float  # 1/s
    r_min: float  # m
    r_max: float
    slope: float  # p of dn/dr ~ r^-p
    density: float  # kg/m^3 (particles)
    optical_depth: float | None
    surface_density: float | None  # kg/m^2
    aspect: float  # Ly / Lx
    dispersion: float  # initial velocity dispersion in units of <r> Omega
    thickness: float  # initial layer: Gaussian sigma_z in units of r_max
    restitution: str
    eps_n: float
    ghosts: int
    self_gravity: bool


def radius_moments(cfg: RingConfig, k: int) -> float:
    """<r^k> of the radius distribution."""
    lo, hi, p = cfg.r_min, cfg.r_max, cfg.slope
    if hi == lo:
        return lo ** k

    def integral(q):  # int_lo^hi r^-q dr
        return math.log(hi / lo) if abs(q - 1) < 1e-12 else (hi ** (1 - q) - lo ** (1 - q)) / (1 - q)
    return integral(p - k) / integral(p)


def draw_radii(cfg: RingConfig, n: int, rng: np.random.Generator) -> np.ndarray:
    lo, hi, p = cfg.r_min, cfg.r_max, cfg.slope
    if hi == lo:
        return np.full(n, lo)
    u = rng.uniform(0, 1, n)
    if abs(p - 1) < 1e-12:
        return lo * (hi / lo) ** u
    a, b = lo ** (1 - p), hi ** (1 - p)
    return (a + u * (b - a)) ** (1 / (1 - p))


def box_area(cfg: RingConfig, n: int) -> float:
    if cfg.optical_depth is not None:
        return n * math.pi * radius_moments(cfg, 2) / cfg.optical_depth
    mean_mass = cfg.density * 4 / 3 * math.pi * radius_moments(cfg, 3)
    return n * mean_mass / cfg.surface_density


def sheet_for(cfg: RingConfig, n: int) -> Sheet:
    area = box_area(cfg, n)
    lx = math.sqrt(area / cfg.aspect)
    return Sheet(cfg.omega, lx, cfg.aspect * lx, cfg.ghosts, cfg.restitution, cfg.eps_n,
                 self_gravity=cfg.self_gravity)


def toomre_wavelength(cfg: RingConfig, n: int) -> float:
    """lambda_cr = 4 pi^2 G Sigma / Omega^2 (m): the wakes' scale."""
    sheet = sheet_for(cfg, n)
    sigma = n * cfg.density * 4 / 3 * math.pi * radius_moments(cfg, 3) / (sheet.lx * sheet.ly)
    return 4 * math.pi ** 2 * G_SI * sigma / cfg.omega ** 2


def hill_ratio(cfg: RingConfig) -> float:
    """r_h: the mutual Hill radius of two equal touching spheres over their contact distance,
    (8 pi G rho / (9 Omega^2))^(1/3) / 2 (Salo et al. 2004): it sets how strongly the spheres
    clump and how steep the wakes are (Michikoshi et al. 2015)."""
    return (8 * math.pi * G_SI * cfg.density / (9 * cfg.omega ** 2)) ** (1 / 3) / 2


def with_optical_depth(scene, tau: float):
    """The ring `scene` at optical depth `tau` (the box follows; surface density dropped)."""
    if scene.model != "ring":
        raise SceneError(f"{scene.name} is not a ring scene: it has no optical depth")
    if not (isinstance(tau, (int, float)) and 0 < tau <= 5):
        raise SceneError(f"optical depth must be in (0, 5], got {tau!r}")
    cfg = replace(scene.config, optical_depth=float(tau), surface_density=None)
    return replace(scene, config=cfg)


def build(cfg: RingConfig, n: int, rng: np.random.Generator) -> ParticleState:
    sheet = sheet_for(cfg, n)
    radius = draw_radii(cfg, n, rng)
    mass = cfg.density * 4 / 3 * math.pi * radius ** 3
    h = cfg.thickness * cfg.r_max
    lo, hi = np.array([-sheet.lx / 2, -sheet.ly / 2]), np.array([sheet.lx / 2, sheet.ly / 2])

    def place(k):
        return np.c_[rng.uniform(lo, hi, (k, 2)), rng.normal(0, h, k)]

    pos = place(n)
    ghost_pos = sheet.ghost_offsets(0.0, 1)[0]
    movers = np.unique(collide.touching(pos, radius, ghost_pos).j)  # one of each pair
    still = np.ones(n, bool)
    still[movers] = False
    fixed = collide.Fixed(pos[still], radius[still], ghost_pos)
    again = np.arange(len(movers))  # indices into movers
    for _ in range(PLACE_TRIES):  # re-draw the movers that overlap; check the movers alone
        if not len(again):
            break
        pos[movers[again]] = place(len(again))
        bad = fixed.hit(pos[movers[again]], radius[movers[again]])
        among = collide.touching(pos[movers], radius[movers], ghost_pos).j
        again = np.union1d(again[bad], among)
    else:
        raise SceneError(f"ring: could not place {n} spheres without overlaps at this optical "
                         f"depth; lower it or raise [model] thickness")
    sigma_v = cfg.dispersion * radius_moments(cfg, 1) * cfg.omega
    vel = rng.normal(0, sigma_v, (n, 3))
    vel -= vel.mean(axis=0)
    vel[:, 1] += -1.5 * cfg.omega * pos[:, 0]
    state = ParticleState(pos, vel, mass, np.full(n, Component.STAR, np.uint8), radius=radius)
    state.meta["sheet"] = sheet
    return state


def parse(table, units) -> RingConfig:
    omega = table.number("omega", lo=0, lo_open=True)
    r_min = table.number("radius_min", lo=0, lo_open=True)
    r_max = table.number("radius_max", r_min, lo=r_min)
    slope = table.number("radius_slope", 3.0, lo=0)
    density = table.number("particle_density", lo=0, lo_open=True)
    tau = table.number("optical_depth", None, lo=0, hi=5, lo_open=True)
    sigma = table.number("surface_density", None, lo=0, lo_open=True)
    if (tau is None) == (sigma is None):
        raise SceneError(f"{table.source}: [model] give optical_depth or surface_density "
                         f"(kg/m^2), one of them")
    cfg = RingConfig(
        omega, r_min, r_max, slope, density, tau, sigma,
        table.number("aspect", 1.0, lo=0.1, hi=10),
        table.number("dispersion", 2.0, lo=0),
        table.number("thickness", 3.0, lo=0.5),
        table.string("restitution", "bridges", choices=RESTITUTION_LAWS),
        table.number("eps_n", 0.5, lo=0, hi=1),
        table.integer("ghosts", 1, lo=0, hi=GHOSTS_MAX),
        table.boolean("self_gravity", True))
    table.finish()
    return cfg


register("ring", parse, build, "a shearing-sheet patch of a planetary ring (SI units)")
