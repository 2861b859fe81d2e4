"""Domain decomposition: Peano-Hilbert keys in the global cube, splitters from a weighted key
sample, and the particle exchange (Bonsai's scheme, thesis chapter 6).

Each rank sorts its keys and sends every s-th one with a weight: the particles it stands for
times the rank's measured cost per particle (the interactions of its last force evaluation
per particle), so a rank whose particles were expensive gets fewer. The weighted samples,
sorted, are cut into `size` equal parts; the cut keys are the splitters, and rank r owns the
keys in [splitter[r-1], splitter[r]). Ranks own contiguous stretches of the key curve, so
their domains are compact and their LETs small (a Hilbert stretch is more compact than a
Morton one: consecutive keys are neighbouring cells).

Two choices keep the domains' faces flat. The cube is centred on the particles' median
point, so the curve's first cuts (halves, quarters, octants of the cube) pass through the
middle of the mass. And each cut is moved, within SNAP_TOLERANCE of a part's weight, to the
coarsest boundary of the curve (the 4 first octants are a half of the cube, 2 a quarter): a
cut that falls deep inside a cell hands the other rank that cell's sparse far corners,
outliers whose groups' boxes reach across this domain (a Plummer sphere on 2 ranks: the LET
was 90% of the remote particles, 19% after).
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.cpu import keys as mkeys

SAMPLES_PER_RANK = 4096  # keys (and positions) each rank contributes to the samples
CENTRE_SAMPLES = 65536  # positions each rank contributes to the cube's centre (the median)
SNAP_TOLERANCE = 0.02  # a cut may move by this fraction of a part's weight to a coarser cell


def global_cube(comm, pos32: np.ndarray, samples: int = CENTRE_SAMPLES):
    """(lo, L, scale) of a cube holding all ranks' float32 positions, centred on their median
    point (per axis, of every rank's sample weighted by the particles each stands for)."""
    lo = comm.allreduce(pos32.min(axis=0) if len(pos32) else np.full(3, np.inf), "min",
                        "the bounding cube")
    hi = comm.allreduce(pos32.max(axis=0) if len(pos32) else np.full(3, -np.inf), "max",
                        "the bounding cube")
    step = max(1, -(-len(pos32) // samples))
    mine = pos32[step // 2::step].astype(np.float64)
    gathered = comm.gather((mine, len(pos32) / max(len(mine), 1)), what="the position sample")
    centre = None
    if comm.rank == 0:
        centre = median_point(np.concatenate([g[0] for g in gathered]),
                              np.concatenate([np.full(len(g[0]), g[1]) for g in gathered]))
    centre = np.clip(comm.bcast(centre, what="the cube's centre"), lo, hi)
    half = max(float((hi - centre).max()), float((centre - lo).max()))
    return mkeys.cube((centre - half).astype(np.float32), (centre + half).astype(np.float32))


def median_point(points: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(3,) the weighted median of points (n, 3) on each axis."""
    out = np.empty(3)
    for axis in range(3):
        order = np.argsort(points[:, axis])
        cum = np.cumsum(weight[order])
        out[axis] = points[order[np.searchsorted(cum, 0.5 * cum[-1])], axis]
    return out


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
              samples: int = SAMPLES_PER_RANK, per_key: float = 1.0) -> np.ndarray:
    """The size - 1 splitter keys (uint64) from every rank's weighted key sample. keys: the
    rank's particles' keys, or a sample of them each standing for `per_key` particles."""
    ordered = np.sort(keys)
    step = max(1, -(-len(ordered) // samples))
    mine = ordered[step // 2::step]
    cost = max(cost_per_particle, 1e-12) * per_key
    weight = np.full(len(mine), step * cost)
    if len(mine):  # the last sample stands for what remains
        weight[-1] = (len(ordered) - step * (len(mine) - 1)) * cost
    gathered = comm.gather((mine, weight), what="the key sample")
    cuts = None
    if comm.rank == 0:
        k = np.concatenate([g[0] for g in gathered])
        w = np.concatenate([g[1] for g in gathered])
        cuts = split_sample(k, w, comm.size)
    return comm.bcast(cuts, what="the splitters")


def split_sample(keys: np.ndarray, weight: np.ndarray, parts: int,
                 tolerance: float = SNAP_TOLERANCE) -> np.ndarray:
    """parts - 1 keys cutting the weighted sample into parts of equal weight, each moved to
    the coarsest cell boundary of the curve within `tolerance` of a part's weight."""
    if len(keys) == 0:
        return np.zeros(parts - 1, np.uint64)
    order = np.argsort(keys, kind="stable")
    k, cum = keys[order], np.cumsum(weight[order])
    targets = cum[-1] * np.arange(1, parts) / parts
    slack = tolerance * cum[-1] / parts

    def key_at(w):
        return k[np.minimum(np.searchsorted(cum, w, side="right"), len(k) - 1)]
    return np.array([coarsest_boundary(key_at(t - slack), key_at(t), key_at(t + slack))
                     for t in targets], np.uint64)


def coarsest_boundary(lo, exact, hi) -> np.uint64:
    """The key in [lo, hi] with the most trailing zero bits (the start of the largest piece
    of the curve: a half, quarter, eighth... of the cube, then of its cells), the nearest to
    `exact` among equals."""
    lo, exact, hi = int(lo), int(exact), int(hi)
    for bit in range(3 * mkeys.KEY_BITS - 1, 0, -1):
        step = 1 << bit
        first, last = -(-lo // step) * step, hi // step * step
        if first <= last:
            return np.uint64(min(max((exact + step // 2) // step * step, first), last))
    return np.uint64(exact)


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
