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
                  chunk_pairs: int = CHUNK_PAIRS, workers: int | None = None, ghosts=None):
    """Accelerations (T, 3) and potentials (T,), float64, of pos[targets] (all particles when
    None) due to all particles, with Plummer softening: phi_i = -G sum_j m_j / sqrt(r^2 + eps^2).

    The pair of a particle with itself is left out; without softening, so are pairs at zero
    distance (their force is undefined), as in the tree code. Chunks of targets run on
    `workers` threads (default threads.workers()). `ghosts` (K, 3): offsets of periodic
    images of all particles that act as sources too (a particle's images included).
    """
    if ghosts is not None and len(ghosts):
        pos = np.asarray(pos, dtype=np.float64)
        n = len(pos)
        targets = np.arange(n) if targets is None else targets
        pos = np.concatenate([pos] + [pos + o for o in np.asarray(ghosts, np.float64)])
        mass = np.tile(np.asarray(mass, np.float64), len(ghosts) + 1)
    return _direct(pos, None, mass, eps, G, targets, chunk_pairs, workers)[:2]


def direct_forces_jerk(pos, vel, mass, eps: float, G: float = 1.0, targets=None,
                       chunk_pairs: int = CHUNK_PAIRS, workers: int | None = None):
    """(acc, pot, jerk) as direct_forces, plus the jerk da/dt (T, 3) for the velocities `vel`:
    j_i = G sum_j m_j [v_ij / r^3 - 3 (x_ij . v_ij) x_ij / r^5] (r softened), for Hermite."""
    return _direct(pos, vel, mass, eps, G, targets, chunk_pairs, workers)


def _direct(pos, vel, mass, eps, G, targets, chunk_pairs, workers):
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
    jerk = None if vel is None else np.zeros((len(targets), 3))
    if vel is not None:
        vel = np.asarray(vel, dtype=np.float64)
        if vel.shape != (n, 3):
            raise GalaxyviewError(f"direct_forces: vel has shape {vel.shape}, expected ({n}, 3)")
        vsrc = [np.ascontiguousarray(vel[:, k]) for k in range(3)]
    eps2 = check_eps(eps) ** 2
    width = max(1, min(n, chunk_pairs))  # sources per tile
    chunk = max(1, chunk_pairs // width)  # targets per tile
    rows = max(1, min(chunk, len(targets)))  # a small active block needs small tiles
    local = threading.local()

    def run(a: int) -> None:
        ti = targets[a:a + chunk]
        bufs = getattr(local, "bufs", None)
        if bufs is None:  # per-thread scratch: fresh large arrays would cost page faults
            bufs = local.bufs = np.empty((5 if vel is None else 7, rows * width))
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
            w *= mass[j0:j1]  # m_j / r^3
            for k in range(3):
                acc[a:a + chunk, k] += np.einsum("ij,ij->i", d[k], w)
            if jerk is not None:  # w (v_ij - 3 (x.v) / r^2 x_ij), v_ij = v_j - v_i
                inv *= inv  # 1 / r^2
                rv = buf[6]
                rv[...] = 0.0
                for k in range(3):
                    dv = np.subtract(vsrc[k][None, j0:j1], vsrc[k][ti][:, None], out=buf[5])
                    jerk[a:a + chunk, k] += np.einsum("ij,ij->i", dv, w)
                    dv *= d[k]
                    rv += dv
                rv *= inv
                rv *= 3.0
                rv *= w
                for k in range(3):
                    jerk[a:a + chunk, k] -= np.einsum("ij,ij->i", d[k], rv)

    starts = range(0, len(targets), chunk)
    workers = threads.workers() if workers is None else max(1, int(workers))
    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(run, starts))
    else:
        for a in starts:
            run(a)
    return G * acc, G * pot, (None if jerk is None else G * jerk)
