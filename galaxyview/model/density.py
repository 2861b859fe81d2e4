"""Local density from the octree's cells: each particle gets the mass density of the smallest
cell around it (of the Morton-key octree both engines build over the bounding cube) that
holds at least `n_min` particles: the tree estimate of Bonsai's and Gadget's density plots, at
the resolution the particles allow."""
from __future__ import annotations

import numpy as np

MAX_LEVEL = 16  # cells of 1/65536 of the cube are as fine as a picture needs
N_MIN = 32  # particles in the smallest cell that gives a particle its density
PAD = 1e-5  # the cube's side is the extent times 1 + PAD (as the GPU engine's tree)


def tree_density(pos: np.ndarray, mass: np.ndarray, n_min: int = N_MIN) -> np.ndarray:
    """(N,) float64 mass per unit volume of each particle's smallest cell with >= n_min
    particles (the root cell when there are fewer particles than that)."""
    pos = np.asarray(pos, np.float64)
    n = len(pos)
    if n == 0:
        return np.zeros(0)
    mass = np.asarray(mass, np.float64)
    lo = pos.min(axis=0)
    size = max(float((pos.max(axis=0) - lo).max()), 1e-30) * (1 + PAD)
    cells = np.minimum(((pos - lo) / size * 2**MAX_LEVEL).astype(np.int64), 2**MAX_LEVEL - 1)
    density = np.full(n, mass.sum() / size**3)
    for level in range(1, MAX_LEVEL + 1):
        c = cells >> (MAX_LEVEL - level)
        key = (c[:, 0] << (2 * level)) | (c[:, 1] << level) | c[:, 2]
        _, cell, count = np.unique(key, return_inverse=True, return_counts=True)
        full = count[cell] >= n_min
        if not full.any():
            break
        cell_mass = np.bincount(cell, weights=mass)
        volume = (size / 2**level) ** 3
        density[full] = cell_mass[cell[full]] / volume
    return density
