"""Star-cluster structure: the density centre and core radius (Casertano & Hut 1985) and the
Lagrangian radii (radii holding given fractions of the mass)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LAGRANGE_FRACTIONS = (0.01, 0.1, 0.5, 0.9)
NEIGHBOURS = 6  # Casertano & Hut's density from the 6th nearest neighbour
SAMPLE_MAX = 1 << 18  # larger systems are measured on a random sample of this many


@dataclass
class Structure:
    centre: np.ndarray  # density centre (3,)
    core_radius: float
    lagrangian: dict  # mass fraction -> radius about the density centre

    def as_dict(self) -> dict:
        return {"density_centre": [float(x) for x in self.centre],
                "core_radius": self.core_radius,
                "lagrangian_radii": {f"{f:g}": r for f, r in self.lagrangian.items()}}


def local_densities(pos: np.ndarray, mass: np.ndarray, k: int = NEIGHBOURS) -> np.ndarray:
    """rho_j = (k - 1) <m> / (4/3 pi r_k^3) from the k-th nearest neighbour's distance r_k
    (Casertano & Hut 1985; the particle itself and the k-th neighbour are left out of the
    mass, so the estimate is unbiased)."""
    from scipy.spatial import cKDTree

    k = min(k, len(mass) - 1)
    if k < 2:
        return np.ones(len(mass))
    dist, idx = cKDTree(pos).query(pos, k + 1)
    inner = mass[idx[:, 1:k]].sum(axis=1)
    r = np.maximum(dist[:, k], np.finfo(float).tiny)
    return inner / (4.0 / 3.0 * np.pi * r**3)


def structure(pos, mass, fractions=LAGRANGE_FRACTIONS, rng=None) -> Structure:
    """Density centre, core radius r_c = sum rho_j |x_j - x_d| / sum rho_j and Lagrangian
    radii about x_d; systems above SAMPLE_MAX particles are measured on a random sample,
    massless ones by number."""
    pos = np.asarray(pos, np.float64)
    mass = np.asarray(mass, np.float64)
    if len(mass) > SAMPLE_MAX:
        pick = (rng or np.random.default_rng(0)).choice(len(mass), SAMPLE_MAX, replace=False)
        pos, mass = pos[pick], mass[pick]
    if not mass.sum() > 0:  # test particles only: measured by number
        mass = np.ones_like(mass)
    rho = local_densities(pos, mass)
    centre = (rho[:, None] * pos).sum(axis=0) / rho.sum()
    r = np.linalg.norm(pos - centre, axis=1)
    core = float((rho * r).sum() / rho.sum())
    order = np.argsort(r)
    cum = np.cumsum(mass[order]) / mass.sum()
    lagr = {f: float(r[order][min(np.searchsorted(cum, f), len(r) - 1)]) for f in fractions}
    return Structure(centre, core, lagr)
