"""Interaction kernels on padded blocks: many groups at once, float32, results per target.

A block holds Gc groups, each with up to `ng` targets (its particles) and up to `ns` sources
(its particle or cell list); padded sources have zero mass. Arrays are (Gc, ng, ns) and come
from a Workspace, so no temporaries are allocated per block. Plummer softening: r2 = |r|^2 +
eps^2 in every term.
"""
from __future__ import annotations

import math

import numpy as np


class Workspace:
    """Reusable float32 scratch arrays: get(k, shape) is a view of the k-th buffer."""

    def __init__(self):
        self._bufs: dict[int, np.ndarray] = {}

    def get(self, k: int, shape: tuple) -> np.ndarray:
        size = math.prod(shape)
        buf = self._bufs.get(k)
        if buf is None or buf.size < size:
            buf = self._bufs[k] = np.empty(max(size, 1), np.float32)
        return buf[:size].reshape(shape)


def _diffs_r2(ws, shape, tx, ty, tz, sx, sy, sz, eps2):
    """dx, dy, dz = s - t (broadcast to shape) and r2 = |d|^2 + eps2."""
    d = [np.subtract(s, t, out=ws.get(k, shape)) for k, (s, t) in
         enumerate(((sx, tx), (sy, ty), (sz, tz)))]
    r2 = np.multiply(d[0], d[0], out=ws.get(3, shape))
    tmp = ws.get(4, shape)
    for dk in d[1:]:
        r2 += np.multiply(dk, dk, out=tmp)
    r2 += eps2
    return d, r2


def _rsqrt(r2, out):
    np.sqrt(r2, out=out)
    return np.divide(np.float32(1.0), out, out=out)


def _matvec(a, v):
    """(Gc, ng, ns) @ (Gc, ns) -> (Gc, ng)."""
    return np.matmul(a, v[:, :, None])[:, :, 0]


def pp_block(ws, t, s, sm, eps2, self_at=()):
    """Particle-particle: acc (Gc, ng, 3) and pot (Gc, ng) of targets t = (tx, ty, tz), each
    (Gc, ng, 1), due to sources s = (sx, sy, sz), each (Gc, 1, ns), of masses sm (Gc, ns).

    Differences are taken directly (close pairs keep their precision). self_at: index arrays
    (group, target, source) of the pairs of a particle with itself, left out. Without
    softening, pairs at zero distance are left out too (their force is undefined).
    """
    shape = (sm.shape[0], t[0].shape[1], sm.shape[1])
    d, r2 = _diffs_r2(ws, shape, *t, *s, eps2)
    if len(self_at):
        r2[self_at] = np.inf
    if eps2 == 0:
        np.copyto(r2, np.float32(np.inf), where=r2 == 0)
    inv = _rsqrt(r2, ws.get(4, shape))
    pot = -_matvec(inv, sm)
    w = np.multiply(inv, inv, out=r2)  # m / r^3
    w *= inv
    w *= sm[:, None, :]
    acc = np.stack([np.einsum("gij,gij->gi", dk, w) for dk in d], -1)
    return acc, pot


def pc_block(ws, x, c, cm, q=None, eps2=np.float32(0)):
    """Particle-cell, monopole + quadrupole: acc (Gc, ng, 3) and pot (Gc, ng).

    x: (x, y, z) of the targets about their group centre, each (Gc, ng); c: the same for the
    cells' centres of mass, each (Gc, ns); cm (Gc, ns): masses; q: the six second moments
    (xx, yy, zz, xy, xz, yz), each (Gc, ns), or None for monopole only.
    phi = -M/r - (3 r.Q.r / r^5 - tr Q / r^3) / 2 with r = x - com.

    Sums over cells are matrix products: |x - c|^2 = |x|^2 - 2 x.c + |c|^2, r.Q.r = x.Q.x -
    2 x.Qc + c.Q.c and sum_j f_ij (x_i - c_j) = x_i sum_j f_ij - sum_j f_ij c_j. Coordinates
    about the group centre keep the cancellation small: accepted cells lie farther than
    l/theta from the group's box, so r2 stays positive.
    """
    gc, ns = cm.shape
    ng = x[0].shape[1]
    shape = (gc, ng, ns)
    one_t = np.ones((gc, ng), np.float32)
    one_c = np.ones((gc, ns), np.float32)
    xx = x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
    cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
    feat_t = np.stack([*x, xx + eps2, one_t], -1)
    feat_c = np.stack([-2 * c[0], -2 * c[1], -2 * c[2], one_c, cc], 1)
    r2 = np.matmul(feat_t, feat_c, out=ws.get(0, shape))
    inv = _rsqrt(r2, r2)
    inv2 = np.multiply(inv, inv, out=ws.get(1, shape))
    inv3 = np.multiply(inv2, inv, out=ws.get(2, shape))
    pot = -_matvec(inv, cm)
    weights = [cm * c[0], cm * c[1], cm * c[2], cm]
    if q is not None:
        trq = q[0] + q[1] + q[2]
        weights.append(trq)
    s3 = np.matmul(inv3, np.stack(weights, -1))  # sum M c / r^3, sum M / r^3, sum trQ / r^3
    xs = np.stack(x, -1)
    acc = s3[..., 0:3] - xs * s3[..., 3:4]
    if q is None:
        return acc, pot
    pot += np.float32(0.5) * s3[..., 4]
    # quadrupole: 3 Q r / r^5 + r (3/2 trQ / r^5 - 15/2 r.Q.r / r^7)
    qc = (q[0] * c[0] + q[3] * c[1] + q[4] * c[2],
          q[3] * c[0] + q[1] * c[1] + q[5] * c[2],
          q[4] * c[0] + q[5] * c[1] + q[2] * c[2])
    cqc = qc[0] * c[0] + qc[1] * c[1] + qc[2] * c[2]
    x0, x1, x2 = x
    feat_t = np.stack([x0 * x0, x1 * x1, x2 * x2, 2 * x0 * x1, 2 * x0 * x2, 2 * x1 * x2,
                       x0, x1, x2, one_t], -1)
    feat_c = np.stack([*q, -2 * qc[0], -2 * qc[1], -2 * qc[2], cqc], 1)
    rqr = np.matmul(feat_t, feat_c, out=ws.get(3, shape))
    inv5 = np.multiply(inv3, inv2, out=inv3)
    p5 = np.multiply(rqr, inv5, out=rqr)  # r.Q.r / r^5
    pot -= np.float32(1.5) * _matvec(p5, one_c)
    s7 = np.matmul(np.multiply(p5, inv2, out=p5), np.stack([*c, one_c], -1))  # r.Q.r / r^7
    acc -= np.float32(7.5) * (xs * s7[..., 3:4] - s7[..., 0:3])
    trq = trq * np.float32(1.5)
    a = np.matmul(inv5, np.stack([*q, *qc, trq * c[0], trq * c[1], trq * c[2], trq], -1))
    acc += xs * a[..., 12:13] - a[..., 9:12]  # 3/2 trQ r / r^5
    acc[..., 0] += 3 * (a[..., 0] * x0 + a[..., 3] * x1 + a[..., 4] * x2 - a[..., 6])
    acc[..., 1] += 3 * (a[..., 3] * x0 + a[..., 1] * x1 + a[..., 5] * x2 - a[..., 7])
    acc[..., 2] += 3 * (a[..., 4] * x0 + a[..., 5] * x1 + a[..., 2] * x2 - a[..., 8])
    return acc, pot
