"""Local density from the octree's cells: each particle gets the mass density of the smallest
cell around it (of the Morton-key octree both engines build over the bounding cube) that
holds at least `n_min` particles: the tree estimate of Bonsai's and Gadget's density plots, at
the resolution the particles allow. `key_density` gives the same estimate from 63-bit keys in a
given cube, for a share of a set cut along a space-filling curve (engines/parallel/density.py)."""
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


KEY_BITS = 21  # bits per axis of the keys key_density takes (3 * 21 = 63)


def key_density(keys: np.ndarray, mass: np.ndarray, size: float, n_min: int = N_MIN,
                ends: np.ndarray | None = None) -> np.ndarray:
    """tree_density from 63-bit keys (a level-L cell is the keys' top 3L bits: Morton or
    Peano-Hilbert keys) in a cube of side `size`. `ends` (MAX_LEVEL + 1, 4): the count and
    mass other processes hold in this set's first and in its last cell (in key order) of
    each level, added to them (the last's only where it is another cell than the first)."""
    keys = np.asarray(keys, np.uint64)
    n = len(keys)
    if n == 0:
        return np.zeros(0)
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    cum = np.r_[0.0, np.cumsum(np.asarray(mass, np.float64)[order])]
    sorted_density = np.empty(n)
    for level in range(MAX_LEVEL + 1):
        cell = k >> np.uint64(3 * (KEY_BITS - level))
        start = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        stop = np.r_[start[1:], n]
        count = (stop - start).astype(np.float64)
        cell_mass = cum[stop] - cum[start]
        if ends is not None:
            count[0] += ends[level, 0]
            cell_mass[0] += ends[level, 1]
            if len(start) > 1:
                count[-1] += ends[level, 2]
                cell_mass[-1] += ends[level, 3]
        full = count >= n_min if level else np.ones(len(start), bool)  # the root always
        if not full.any():
            break
        take = np.repeat(full, stop - start)
        sorted_density[take] = np.repeat(cell_mass / (size / 2**level) ** 3, stop - start)[take]
    density = np.empty(n)
    density[order] = sorted_density
    return density
