"""Direct summation in float64, compiled: all pairs for acc, pot and the jerk, and the whole
engine step of the 4th-order Hermite with block time steps.

The same forces as engines/cpu/direct.py (Plummer softening; a particle's own pair and, without
softening, pairs at zero distance left out) up to the order of the sums: the loops over sources
are SIMD loops (fastmath: reassociation and FMA only, so 1/sqrt stays exact). Targets run on
threads when a block has at least PARALLEL_PAIRS pairs, else on the calling thread: on a busy
machine (the viewer draws on the other core) a parallel region waits for a descheduled thread,
which costs more than a block of a few ms. A target's sums do not depend on the threads.

`block_steps` is integrators/hermite_cpu.py's `Hermite4.step` loop (blocks.py's schedule, the
same predictor, corrector and level rules, in the same float64 operations) with no Python
between block steps.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.cpu_numba.jit import use_threads
from galaxyview.model.params import check_eps
from galaxyview.numba_setup import kernel, prange

EXACT_FAST = {"reassoc", "contract", "nsz"}  # vectorised sums and FMA; no approximate 1/sqrt
PARALLEL_PAIRS = 1 << 22  # fewer pairs (under ~10 ms of work) run on the calling thread


@kernel(fastmath=EXACT_FAST)
def _acc_jerk(i, p, mass, eps2):
    """acc and jerk of particle i from all sources; p (6, N): x y z vx vy vz."""
    xi, yi, zi, ui, vi, wi = p[0, i], p[1, i], p[2, i], p[3, i], p[4, i], p[5, i]
    px, py, pz, pu, pv, pw = p[0], p[1], p[2], p[3], p[4], p[5]
    ax = ay = az = jx = jy = jz = 0.0
    for j in range(np.uint64(0), np.uint64(mass.size)):
        dx, dy, dz = px[j] - xi, py[j] - yi, pz[j] - zi
        du, dv, dw = pu[j] - ui, pv[j] - vi, pw[j] - wi
        r2 = dx * dx + dy * dy + dz * dz + eps2
        ok = r2 > 0.0  # the own pair without softening (with it, d = 0 adds nothing)
        inv = 1.0 / np.sqrt(r2 if ok else 1.0)
        inv2 = inv * inv if ok else 0.0
        w = mass[j] * inv * inv2
        rv = 3.0 * (dx * du + dy * dv + dz * dw) * inv2
        ax += w * dx
        ay += w * dy
        az += w * dz
        jx += w * (du - rv * dx)
        jy += w * (dv - rv * dy)
        jz += w * (dw - rv * dz)
    return ax, ay, az, jx, jy, jz


@kernel(fastmath=EXACT_FAST)
def _acc_pot_range(i, p, mass, eps2, j0, j1):
    xi, yi, zi = p[0, i], p[1, i], p[2, i]
    px, py, pz = p[0], p[1], p[2]
    ax = ay = az = pot = 0.0
    for j in range(np.uint64(j0), np.uint64(j1)):
        dx, dy, dz = px[j] - xi, py[j] - yi, pz[j] - zi
        r2 = dx * dx + dy * dy + dz * dz + eps2
        ok = r2 > 0.0
        inv = 1.0 / np.sqrt(r2 if ok else 1.0)
        mr = mass[j] * inv if ok else 0.0
        pot -= mr
        w = mr * inv * inv
        ax += w * dx
        ay += w * dy
        az += w * dz
    return ax, ay, az, pot


@kernel()
def _acc_pot(i, p, mass, eps2):
    """acc and pot of particle i from all others (its own pair left out)."""
    a = _acc_pot_range(i, p, mass, eps2, 0, i)
    b = _acc_pot_range(i, p, mass, eps2, i + 1, mass.size)
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]


@kernel()
def _row(t, i, p, mass, eps2, G, jerk, acc, pot, jrk):
    if pot.size:
        ax, ay, az, q = _acc_pot(i, p, mass, eps2)
        acc[t, 0], acc[t, 1], acc[t, 2], pot[t] = G * ax, G * ay, G * az, G * q
    if jerk:
        ax, ay, az, jx, jy, jz = _acc_jerk(i, p, mass, eps2)
        acc[t, 0], acc[t, 1], acc[t, 2] = G * ax, G * ay, G * az
        jrk[t, 0], jrk[t, 1], jrk[t, 2] = G * jx, G * jy, G * jz


@kernel()
def _rows_serial(targets, count, p, mass, eps2, G, jerk, acc, pot, jrk):
    for t in range(count):
        _row(t, targets[t], p, mass, eps2, G, jerk, acc, pot, jrk)


@kernel(parallel=True)
def _rows_parallel(targets, count, p, mass, eps2, G, jerk, acc, pot, jrk):
    for t in prange(count):
        _row(t, targets[t], p, mass, eps2, G, jerk, acc, pot, jrk)


@kernel()
def _rows(targets, count, p, mass, eps2, G, jerk, acc, pot, jrk, parallel_pairs):
    """acc (and pot where pot.size, the jerk where `jerk`) of targets[:count] into rows
    0..count-1; threads for a block of parallel_pairs pairs or more."""
    if count * mass.size >= parallel_pairs and count > 1:
        _rows_parallel(targets, count, p, mass, eps2, G, jerk, acc, pot, jrk)
    else:
        _rows_serial(targets, count, p, mass, eps2, G, jerk, acc, pot, jrk)


def direct_forces(pos, vel, mass, eps: float, G: float = 1.0, targets=None, potential=True):
    """(acc, pot, jerk) of pos[targets] (all when None) from all particles, float64, as
    engines/cpu/direct.py's direct_forces_jerk (vel given) or direct_forces (vel None: jerk
    None). potential=False leaves pot empty."""
    n = len(mass)
    p = np.empty((6 if vel is not None else 3, n))
    p[:3] = np.asarray(pos, np.float64).T
    if vel is not None:
        p[3:] = np.asarray(vel, np.float64).T
    targets = np.arange(n) if targets is None else np.ascontiguousarray(targets, np.int64)
    t = len(targets)
    acc, jrk = np.empty((t, 3)), np.empty((t if vel is not None else 0, 3))
    pot = np.empty(t if potential else 0)
    use_threads()
    _rows(targets, t, p, np.ascontiguousarray(mass, np.float64), check_eps(eps) ** 2, float(G),
          vel is not None, acc, pot, jrk, PARALLEL_PAIRS)
    return acc, (pot if potential else None), (jrk if vel is not None else None)


# -- the Hermite's engine step -----------------------------------------------------------------

@kernel()
def _norm(a, b, c):
    return np.sqrt(a * a + b * b + c * c)


@kernel()
def _new_level(level, crit, h, t, L):
    """blocks.new_levels for one particle."""
    q = np.log2(h / crit)
    finer = np.ceil(q)
    if not np.isfinite(finer):
        finer = 0.0 if crit > 0 else float(L)
    out = level + int(min(max(finer, 0.0), float(L)))
    if level > 0 and crit >= 2 * h and t % (np.int64(1) << (L - level + 1)) == 0:
        out = level - 1
    return min(max(out, 0), L)


@kernel()
def _block_steps(x0, v0, a0, j0, level, mass, eps2, G, eta, dt, L, shared, p, act, a1, j1,
                 t_i, counts, parallel_pairs):
    """One engine step (2^L ticks) of Hermite block steps on x0, v0, a0, j0 and level, in
    place. Returns (block steps, active particles summed over them, 0), or 1 in the last place
    when an active block's forces were not finite (the arrays then hold that block)."""
    n = mass.size
    tick = dt / (np.int64(1) << L)
    end = np.int64(1) << L
    nopot, s = np.empty(0), np.empty(6)
    counts[:] = 0
    for i in range(n):
        t_i[i] = 0
        counts[level[i]] += 1
    t = np.int64(0)
    n_blocks = 0
    n_active = 0
    while t < end:
        t_next = end
        for k in range(L + 1):
            if counts[k]:
                d = np.int64(1) << (L - k)
                t_next = min(t_next, (t // d + 1) * d)
        zeros = 0
        while (t_next >> zeros) & 1 == 0:
            zeros += 1
        kmin = max(0, L - zeros)
        m = 0
        for i in range(n):
            if level[i] >= kmin:
                act[m] = i
                m += 1
        for i in range(n):  # predict all
            tau = (t_next - t_i[i]) * tick
            for k in range(3):
                p[k, i] = x0[i, k] + tau * (v0[i, k] + tau * (0.5 * a0[i, k]
                                                              + tau / 6.0 * j0[i, k]))
                p[3 + k, i] = v0[i, k] + tau * (a0[i, k] + 0.5 * tau * j0[i, k])
        _rows(act, m, p, mass, eps2, G, True, a1, nopot, j1, parallel_pairs)
        for r in range(m):  # correct the block, give it new levels
            i = act[r]
            h = (t_next - t_i[i]) * tick
            hh = h * h
            for k in range(3):
                a0k, a1k, j0k, j1k = a0[i, k], a1[r, k], j0[i, k], j1[r, k]
                if not (np.isfinite(a1k) and np.isfinite(j1k)):
                    return n_blocks, n_active, 1
                v1 = v0[i, k] + 0.5 * h * (a0k + a1k) + hh / 12.0 * (j0k - j1k)
                x0[i, k] = x0[i, k] + 0.5 * h * (v0[i, k] + v1) + hh / 12.0 * (a0k - a1k)
                v0[i, k] = v1
                snap0 = (-6.0 * (a0k - a1k) - h * (4.0 * j0k + 2.0 * j1k)) / hh
                crackle = (12.0 * (a0k - a1k) + 6.0 * h * (j0k + j1k)) / (hh * h)
                s[k], s[3 + k] = snap0 + h * crackle, crackle
                a0[i, k], j0[i, k] = a1k, j1k
            na = _norm(a1[r, 0], a1[r, 1], a1[r, 2])
            nj = _norm(j1[r, 0], j1[r, 1], j1[r, 2])
            n2, n3 = _norm(s[0], s[1], s[2]), _norm(s[3], s[4], s[5])
            crit = np.sqrt(eta * (na * n2 + nj * nj) / (nj * n3 + n2 * n2))
            new = _new_level(level[i], crit, h, t_next, L)
            counts[level[i]] -= 1
            counts[new] += 1
            level[i] = new
            t_i[i] = t_next
        if shared:
            top = level.max()
            level[:] = top
            counts[:] = 0
            counts[top] = n
        n_blocks += 1
        n_active += m
        t = t_next
    return n_blocks, n_active, 0


def block_steps(x0, v0, a0, j0, level, mass, eps, G, eta, dt, L, shared):
    """Hermite4.step's block-step loop over one engine step of size dt, compiled: x0, v0, a0,
    j0 (N, 3) and level (N,) int32 are advanced in place. Returns (block steps, active
    particles summed over them, finite: False when a block's forces were not finite)."""
    n = len(mass)
    use_threads()
    p = np.empty((6, n))
    act = np.empty(n, np.int64)
    a1, j1 = np.empty((n, 3)), np.empty((n, 3))
    blocks, active, bad = _block_steps(x0, v0, a0, j0, level, mass, check_eps(eps) ** 2, float(G),
                                       float(eta), float(dt), int(L), bool(shared), p, act,
                                       a1, j1, np.empty(n, np.int64),
                                       np.zeros(int(L) + 1, np.int64), PARALLEL_PAIRS)
    return int(blocks), int(active), not bad
