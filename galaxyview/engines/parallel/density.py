"""The local density over several processes: model/density.py's estimate (the mass of the
smallest cell with at least N_MIN particles over its volume) in the decomposition's cube, the
same whatever the number of processes, and no particle gathered.

The domains are stretches of the Peano-Hilbert curve in that cube, and each cell of its octree
is a stretch of the curve too, so of the cells a domain holds at a level only the first and
the last can hold another domain's particles. Each rank sends the count and mass of its two
end cells at every level (one allgather) and adds the others' to its own (`key_density`'s
`ends`). The particles out of their stretch (the strays: none after a step, as the migration
follows the step's drift) go, key and mass, to the rank whose stretch holds them, which finds
their density with its own and sends it back. GPU ranks do the same on the device
(density_device.py).
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.parallel import decompose
from galaxyview.model.density import KEY_BITS, MAX_LEVEL, key_density

LEVELS = MAX_LEVEL + 1
# an end-cell row of a level (uint64): the set is not empty, first cell, last cell, their
# counts and masses (the counts' and masses' float64 bits)
ROW = 7


def end_cells(keys: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """(LEVELS, ROW) uint64: this set's first and last cell of each level with their counts
    and masses (zeros for an empty set)."""
    out = np.zeros((LEVELS, ROW), np.uint64)
    if len(keys) == 0:
        return out
    mass = np.asarray(mass, np.float64)
    first, last = keys.min(), keys.max()
    for level in range(LEVELS):
        shift = np.uint64(3 * (KEY_BITS - level))
        cell = keys >> shift
        f, g = first >> shift, last >> shift
        in_f, in_g = cell == f, cell == g
        numbers = np.array([in_f.sum(), mass[in_f].sum(), in_g.sum(), mass[in_g].sum()])
        out[level] = [1, f, g, *numbers.view(np.uint64)]
    return out


def shared_ends(comm, mine: np.ndarray) -> np.ndarray:
    """Collective: (LEVELS, 4) the count and mass the other ranks hold in this rank's first
    and last cell of each level (the last's zero where it is the first), from every rank's
    end_cells (one allgather)."""
    table = comm.allgather(mine, "the density's end cells", dtype=np.uint64)
    table = table.reshape(comm.size, LEVELS, ROW)
    out = np.zeros((LEVELS, 4))
    if not mine[0, 0]:
        return out
    for r in range(comm.size):
        if r == comm.rank or not table[r, 0, 0]:
            continue
        for level in range(LEVELS):
            _, f, g, *numbers = table[r, level]
            cf, mf, cg, mg = np.array(numbers, np.uint64).view(np.float64)
            for cell, count, m in ((f, cf, mf),) + (((g, cg, mg),) if g != f else ()):
                if cell == mine[level, 1]:
                    out[level, :2] += count, m
                elif cell == mine[level, 2]:
                    out[level, 2:] += count, m
    return out


def send_strays(comm, keys: np.ndarray, mass: np.ndarray, cuts: np.ndarray):
    """Collective: the strays among (keys, mass) to the ranks whose stretch holds them.
    Returns (stray: this rank's, a mask; their order as sent; the keys and masses that came,
    rank after rank, and how many from each rank)."""
    owner = decompose.owners(keys, cuts)
    stray = owner != comm.rank
    order = np.flatnonzero(stray)[np.argsort(owner[stray], kind="stable")]
    rows = np.empty((len(order), 2), np.uint64)
    rows[:, 0] = keys[order]
    rows[:, 1] = np.asarray(mass, np.float64)[order].view(np.uint64)
    counts = np.bincount(owner[order], minlength=comm.size)
    parts = np.split(rows, np.cumsum(counts)[:-1])
    got = comm.alltoallv(parts, "the density's strays")
    came = np.array([len(g) for g in got], np.int64)
    rows = np.concatenate(got)
    return stray, order, rows[:, 0].copy(), rows[:, 1].copy().view(np.float64), came


def return_strays(comm, values: np.ndarray, came: np.ndarray) -> np.ndarray:
    """Collective: the values of the strays that came (rank after rank, `came` from each)
    back to the ranks they came from; this rank's own strays' values, in the order sent."""
    parts = np.split(np.asarray(values, np.float64).reshape(-1, 1), np.cumsum(came)[:-1])
    return np.concatenate(comm.alltoallv(parts, "the strays' density"))[:, 0]


def domain_density(comm, keys: np.ndarray, mass: np.ndarray, cuts: np.ndarray,
                   size: float) -> np.ndarray:
    """Collective: (n,) float64 density of this rank's particles (their Peano-Hilbert keys in
    the decomposition's cube of side `size`, the splitters `cuts`), as key_density gives it
    for all the ranks' particles together."""
    stray, order, got_keys, got_mass, came = send_strays(comm, keys, mass, cuts)
    keys = np.concatenate([keys[~stray], got_keys])
    mass = np.concatenate([np.asarray(mass, np.float64)[~stray], got_mass])
    ends = shared_ends(comm, end_cells(keys, mass))
    density = key_density(keys, mass, size, ends=ends)
    mine = len(density) - len(got_keys)
    out = np.empty(len(stray))
    out[~stray] = density[:mine]
    out[order] = return_strays(comm, density[mine:], came)
    return out
