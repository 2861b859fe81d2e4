"""Domain decomposition: Peano-Hilbert keys in the global cube, splitters from a weighted key
sample, and the particle exchange (Bonsai's scheme, thesis chapter 6).

Each rank sorts its keys and sends every s-th one with a weight: the particles it stands for
times the rank's measured cost per particle (the interactions of its last force evaluation
per particle), so a rank whose particles were expensive gets fewer. The weighted samples,
sorted, are cut into `size` equal parts; the cut keys are the splitters, and rank r owns the
keys in [splitter[r-1], splitter[r]). Ranks own contiguous stretches of the key curve, so
their domains are compact and their LETs small (a Hilbert stretch is more compact than a
Morton one: consecutive keys are neighbouring cells).
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.cpu import keys as mkeys

SAMPLES_PER_RANK = 4096  # keys each rank contributes to the splitter sample


def global_cube(comm, pos32: np.ndarray):
    """(lo, L, scale) of all ranks' float32 positions, with keys.bounding_cube's rules."""
    lo = comm.allreduce(pos32.min(axis=0) if len(pos32) else np.full(3, np.inf), "min",
                        "the bounding cube").astype(np.float32)
    hi = comm.allreduce(pos32.max(axis=0) if len(pos32) else np.full(3, -np.inf), "max",
                        "the bounding cube").astype(np.float32)
    return mkeys.bounding_cube(np.stack([lo, hi]))


def particle_keys(pos32: np.ndarray, cube) -> np.ndarray:
    lo, _, scale = cube
    return hilbert_keys(mkeys.grid_coords(pos32, lo, scale))


def hilbert_keys(coords: np.ndarray) -> np.ndarray:
    """63-bit Peano-Hilbert keys (N,) uint64 of 21-bit integer coordinates (N, 3): Skilling's
    transform (AIP Conf. Proc. 707, 2004) of the axes into the Hilbert transpose, whose bits,
    interleaved as a Morton key's, are the Hilbert index. Compiled (numba, threads); Morton
    keys where numba is missing (the domains are then less compact, nothing else changes)."""
    coords = np.ascontiguousarray(coords, dtype=np.uint64)
    try:
        from galaxyview.engines.parallel.hilbert import transpose
    except ImportError:
        return mkeys.morton_keys(coords)
    out = np.empty_like(coords)
    transpose(coords, mkeys.KEY_BITS, out)
    return mkeys.morton_keys(out)


def splitters(comm, keys: np.ndarray, cost_per_particle: float,
              samples: int = SAMPLES_PER_RANK) -> np.ndarray:
    """The size - 1 splitter keys (uint64) from every rank's weighted key sample."""
    ordered = np.sort(keys)
    step = max(1, -(-len(ordered) // samples))
    mine = ordered[step // 2::step]
    weight = np.full(len(mine), step * max(cost_per_particle, 1e-12))
    if len(mine):  # the last sample stands for what remains
        weight[-1] = (len(ordered) - step * (len(mine) - 1)) * max(cost_per_particle, 1e-12)
    gathered = comm.gather((mine, weight), what="the key sample")
    cuts = None
    if comm.rank == 0:
        k = np.concatenate([g[0] for g in gathered])
        w = np.concatenate([g[1] for g in gathered])
        cuts = split_sample(k, w, comm.size)
    return comm.bcast(cuts, what="the splitters")


def split_sample(keys: np.ndarray, weight: np.ndarray, parts: int) -> np.ndarray:
    """parts - 1 keys cutting the weighted sample into parts of equal weight."""
    if len(keys) == 0:
        return np.zeros(parts - 1, np.uint64)
    order = np.argsort(keys, kind="stable")
    k, cum = keys[order], np.cumsum(weight[order])
    at = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts, side="right")
    return k[np.minimum(at, len(k) - 1)]


def owners(keys: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """The rank owning each key."""
    return np.searchsorted(cuts, keys, side="right")


def exchange(comm, rows: np.ndarray, dest: np.ndarray) -> np.ndarray:
    """Send each row (n, w) to rank dest[i]; returns the rows this rank now owns (its own
    first: they stay, only the others travel)."""
    order = np.argsort(dest, kind="stable")
    counts = np.bincount(dest, minlength=comm.size)
    parts = np.split(rows[order], np.cumsum(counts)[:-1])
    stay, parts[comm.rank] = parts[comm.rank], parts[comm.rank][:0]
    return np.concatenate([stay, *comm.alltoallv(parts, "the particle exchange")])
