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
CENTRE_SAMPLES = 65536  # positions each rank sorts for the cube's centre (the median)
QUANTILES = 1024  # of them per axis, sent by each rank
SNAP_TOLERANCE = 0.02  # a cut may move by this fraction of a part's weight to a coarser cell


def global_cube(comm, pos32: np.ndarray, samples: int = CENTRE_SAMPLES):
    """(lo, L, scale) of a cube holding all ranks' float32 positions, centred on their median
    point. One allgather: each rank's bounds, count and per-axis quantiles of a strided
    sample; every rank finds the same cube from them (the weighted median of the quantiles,
    each standing for its rank's count / QUANTILES)."""
    n = len(pos32)
    row = np.zeros(7 + 3 * QUANTILES)
    row[6] = n
    if n:
        axes = np.ascontiguousarray(pos32.T)  # (reductions and sorts along rows: faster)
        step = max(1, -(-n // samples))
        sample = np.sort(axes[:, step // 2::step], axis=1)  # each axis on its own
        at = ((np.arange(QUANTILES) + 0.5) * sample.shape[1] / QUANTILES).astype(np.int64)
        row[:3], row[3:6], row[7:] = axes.min(axis=1), axes.max(axis=1), sample[:, at].ravel()
    table = comm.allgather(row, "the bounding cube")
    table = table[table[:, 6] > 0]
    if not len(table):
        return mkeys.cube(np.zeros(3, np.float32), np.zeros(3, np.float32))
    lo, hi = table[:, :3].min(axis=0), table[:, 3:6].max(axis=0)
    quantiles = table[:, 7:].reshape(-1, 3, QUANTILES).transpose(0, 2, 1).reshape(-1, 3)
    centre = np.clip(median_point(quantiles, np.repeat(table[:, 6], QUANTILES)), lo, hi)
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
    """The size - 1 splitter keys (uint64) from every rank's weighted key sample (one
    allgather; every rank cuts the same samples). keys: the rank's particles' keys, or a
    sample of them each standing for `per_key` particles."""
    ordered = np.sort(keys)
    step = max(1, -(-len(ordered) // samples))
    mine = ordered[step // 2::step]
    cost = max(cost_per_particle, 1e-12) * per_key
    weight = np.full(len(mine), step * cost)
    if len(mine):  # the last sample stands for what remains
        weight[-1] = (len(ordered) - step * (len(mine) - 1)) * cost
    row = np.zeros(1 + 2 * samples, np.uint64)  # count, keys, weights (their float64 bits)
    row[0] = len(mine)
    row[1:1 + len(mine)] = mine
    row[1 + samples:1 + samples + len(mine)] = weight.view(np.uint64)
    table = comm.allgather(row, "the key sample", dtype=np.uint64)
    k = np.concatenate([t[1:1 + int(t[0])] for t in table])
    w = np.concatenate([t[1 + samples:1 + samples + int(t[0])].view(np.float64) for t in table])
    return split_sample(k, w, comm.size)


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
