"""Direct summation in float64: the reference every tree force is checked against."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from galaxyview.engines.cpu import threads
from galaxyview.errors import GalaxyviewError
from galaxyview.model.params import check_eps

CHUNK_PAIRS = 1 << 17  # (target, source) pairs per tile: five float64 scratch arrays a thread


def direct_forces(pos, mass, eps: float, G: float = 1.0, targets=None,
                  chunk_pairs: int = CHUNK_PAIRS, workers: int | None = None):
    """Accelerations (T, 3) and potentials (T,), float64, of pos[targets] (all particles when
    None) due to all particles, with Plummer softening: phi_i = -G sum_j m_j / sqrt(r^2 + eps^2).

    The pair of a particle with itself is left out; without softening, so are pairs at zero
    distance (their force is undefined), as in the tree code. Chunks of targets run on
    `workers` threads (default threads.workers()).
    """
    pos = np.asarray(pos, dtype=np.float64)
    mass = np.ascontiguousarray(mass, dtype=np.float64)
    n = len(mass)
    if pos.shape != (n, 3):
        raise GalaxyviewError(f"direct_forces: pos has shape {pos.shape}, expected ({n}, 3)")
    targets = np.arange(n) if targets is None else np.asarray(targets, dtype=np.int64)
    if targets.size and (targets.min() < 0 or targets.max() >= n):
        raise GalaxyviewError(f"direct_forces: target indices must lie in 0..{n - 1}")
    acc = np.zeros((len(targets), 3))
    pot = np.zeros(len(targets))
    src = [np.ascontiguousarray(pos[:, k]) for k in range(3)]
    eps2 = check_eps(eps) ** 2
    width = max(1, min(n, chunk_pairs))  # sources per tile
    chunk = max(1, chunk_pairs // width)  # targets per tile
    local = threading.local()

    def run(a: int) -> None:
        ti = targets[a:a + chunk]
        bufs = getattr(local, "bufs", None)
        if bufs is None:  # per-thread scratch: fresh large arrays would cost page faults
            bufs = local.bufs = np.empty((5, chunk * width))
        for j0 in range(0, n, width):
            j1 = min(n, j0 + width)
            shape = (len(ti), j1 - j0)
            buf = [b[:shape[0] * shape[1]].reshape(shape) for b in bufs]
            d = [np.subtract(s[None, j0:j1], s[ti][:, None], out=buf[k])
                 for k, s in enumerate(src)]  # x_j - x_i
            r2 = np.multiply(d[0], d[0], out=buf[3])
            r2 += np.multiply(d[1], d[1], out=buf[4])
            r2 += np.multiply(d[2], d[2], out=buf[4])
            r2 += eps2
            mine = (ti >= j0) & (ti < j1)
            r2[np.flatnonzero(mine), ti[mine] - j0] = np.inf  # no self pair
            if eps2 == 0:
                r2[r2 == 0] = np.inf
            inv = np.sqrt(r2, out=r2)
            np.divide(1.0, inv, out=inv)
            pot[a:a + chunk] -= inv @ mass[j0:j1]
            w = np.multiply(inv, inv, out=buf[4])
            w *= inv
            w *= mass[j0:j1]
            for k in range(3):
                acc[a:a + chunk, k] += np.einsum("ij,ij->i", d[k], w)

    starts = range(0, len(targets), chunk)
    workers = threads.workers() if workers is None else max(1, int(workers))
    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(run, starts))
    else:
        for a in starts:
            run(a)
    return G * acc, G * pot
