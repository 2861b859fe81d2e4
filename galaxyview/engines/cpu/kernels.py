"""Interaction kernels on padded blocks, float32: many groups at once, results per target.

A block holds B list segments, each with up to `ng` targets (its group's particles) and up to
`ns` sources (particles or cells); padded sources have zero mass. The big (B, ng, ns) arrays
come from a Workspace, so they are not allocated per block. Plummer softening: r2 = |r|^2 +
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


def _rsqrt(r2, out):
    np.sqrt(r2, out=out)
    return np.divide(np.float32(1.0), out, out=out)


def _matvec(a, v):
    """(B, ng, ns) @ (B, ns) -> (B, ng)."""
    return np.matmul(a, v[:, :, None])[:, :, 0]


def pp_block(ws, t, s, sm, eps2, self_at=()):
    """Particle-particle: acc (B, ng, 3) and pot (B, ng) of targets t (B, ng, 3) due to
    sources s (B, ns, 3) of masses sm (B, ns).

    The differences s - t come from matrix products [1, -t] . [s, 1]: each is a single
    rounded subtraction, as exact as s - t itself (and faster than broadcasting).
    self_at: index arrays (segment, target, source) of the pairs of a particle with itself,
    left out. Without softening, pairs at zero distance are left out too (their force is
    undefined).
    """
    nb, ng, ns = sm.shape[0], t.shape[1], sm.shape[1]
    shape = (nb, ng, ns)
    left = np.ones((nb, ng, 2), np.float32)
    right = np.ones((nb, 2, ns), np.float32)
    d = []
    for k in range(3):  # x_j - x_i = [1, -x_i] . [x_j, 1]
        np.negative(t[..., k], out=left[..., 1])
        right[:, 0] = s[..., k]
        d.append(np.matmul(left, right, out=ws.get(3 + k, shape)))
    r2 = np.square(d[0], out=ws.get(1, shape))
    tmp = ws.get(2, shape)
    r2 += np.square(d[1], out=tmp)
    r2 += np.square(d[2], out=tmp)
    r2 += eps2
    if len(self_at):
        r2[self_at] = np.inf
    if eps2 == 0:
        np.copyto(r2, np.float32(np.inf), where=r2 == 0)
    inv = _rsqrt(r2, tmp)
    pot = -_matvec(inv, sm)
    w = np.multiply(inv, inv, out=r2)  # m / r^3
    w *= inv
    w *= sm[:, None, :]
    acc = np.stack([np.einsum("bij,bij->bi", dk, w) for dk in d], -1)
    return acc, pot


# columns of the per-cell table of pc_block (about the group centre)
_C, _CC, _ONE, _M, _MC, _TRQ, _Q, _QC, _CQC, _TC, _T = 0, 3, 4, 5, 6, 9, 10, 16, 19, 20, 23
# columns of the per-target table: x.Q.x and -2 x terms, 1, |x|^2 + eps^2
_XX, _X2, _T1, _XE = 0, 6, 9, 10


def pc_block(ws, x, data, centre, eps2, quadrupole=True):
    """Particle-cell, monopole + quadrupole: acc (B, ng, 3) and pot (B, ng).

    x: (x, y, z) of the targets about their group centre, each (B, ng); data (10, B, ns): the
    cells' centres of mass, masses and second moments (xx, yy, zz, xy, xz, yz; zero mass and
    moments for padding); centre (B, 3): the group centres.
    phi = -M/r - (3 r.Q.r / r^5 - tr Q / r^3) / 2 with r = x - com.

    Sums over cells are matrix products: |x - c|^2 = |x|^2 - 2 x.c + |c|^2, r.Q.r = x.Q.x -
    2 x.Qc + c.Q.c and sum_j f_ij (x_i - c_j) = x_i sum_j f_ij - sum_j f_ij c_j. Coordinates
    about the group centre keep the cancellation small: accepted cells lie farther than
    l/theta from the group's box (so r2 stays positive).
    """
    _, nb, ns = data.shape
    ng = x[0].shape[1]
    shape = (nb, ng, ns)
    # per-cell table
    cell = np.empty((nb, ns, 24 if quadrupole else 10), np.float32)
    c = [data[k] - centre[:, k, None] for k in range(3)]
    m = data[3]
    for k in range(3):
        cell[..., _C + k] = c[k]
        np.multiply(m, c[k], out=cell[..., _MC + k])
    cell[..., _CC] = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
    cell[..., _ONE] = 1
    cell[..., _M] = m
    # per-target table
    tgt = np.empty((nb, ng, 11), np.float32)
    for k in range(3):
        np.multiply(x[k], x[k], out=tgt[..., _XX + k])
        np.multiply(x[k], np.float32(-2), out=tgt[..., _X2 + k])
    tgt[..., _T1] = 1
    np.add(tgt[..., _XX] + tgt[..., _XX + 1] + tgt[..., _XX + 2], eps2, out=tgt[..., _XE])
    if quadrupole:
        q = data[4:10]
        trq = np.add(q[0] + q[1], q[2], out=cell[..., _TRQ])
        cell[..., _Q:_Q + 6] = q.transpose(1, 2, 0)
        qc = (q[0] * c[0] + q[3] * c[1] + q[4] * c[2],
              q[3] * c[0] + q[1] * c[1] + q[5] * c[2],
              q[4] * c[0] + q[5] * c[1] + q[2] * c[2])
        for k in range(3):
            cell[..., _QC + k] = qc[k]
            np.multiply(trq, np.float32(1.5) * c[k], out=cell[..., _TC + k])
        cell[..., _CQC] = qc[0] * c[0] + qc[1] * c[1] + qc[2] * c[2]
        np.multiply(trq, np.float32(1.5), out=cell[..., _T])
        for k, (i, j) in enumerate(((0, 1), (0, 2), (1, 2))):
            np.multiply(x[i], 2 * x[j], out=tgt[..., 3 + k])
    rows = cell[..., :_CQC + 1].transpose(0, 2, 1).copy()  # (nb, k, ns) right operands
    # r2 = [-2x, 1, |x|^2 + eps^2] . [c, |c|^2, 1]
    r2 = np.matmul(tgt[..., _X2:_XE + 1], rows[:, _C:_ONE + 1], out=ws.get(0, shape))
    inv = _rsqrt(r2, r2)
    pot = -np.matmul(inv, cell[..., _M:_M + 1])[..., 0]
    inv2 = np.multiply(inv, inv, out=ws.get(1, shape))
    inv3 = np.multiply(inv2, inv, out=ws.get(2, shape))
    last = _TRQ + 1 if quadrupole else _TRQ
    s3 = np.matmul(inv3, cell[..., _M:last])  # sum (M, M c, trQ) / r^3
    xs = np.stack(x, -1)
    acc = s3[..., 1:4] - xs * s3[..., 0:1]
    if not quadrupole:
        return acc, pot
    pot += np.float32(0.5) * s3[..., 4]
    # quadrupole: 3 Q r / r^5 + r (3/2 trQ / r^5 - 15/2 r.Q.r / r^7)
    inv5 = np.multiply(inv3, inv2, out=inv3)
    a = np.matmul(inv5, cell[..., _Q:])  # sum (Q, Qc, c.Q.c, 3/2 trQ c, 3/2 trQ) / r^5
    # sum_j r.Q.r / r^5 = sum_k tgt_k (sum_j G_jk / r^5), G = (Q, Qc, c.Q.c)
    pot -= np.float32(1.5) * np.einsum("bik,bik->bi", tgt[..., :_XE], a[..., :_TC - _Q])
    rqr = np.matmul(tgt[..., :_XE], rows[:, _Q:], out=ws.get(3, shape))
    rqr *= inv5
    rqr *= inv2  # r.Q.r / r^7
    s7 = np.matmul(rqr, cell[..., _C:_ONE + 1])  # sum (c, |c|^2, 1) r.Q.r / r^7
    acc -= np.float32(7.5) * (xs * s7[..., 4:5] - s7[..., 0:3])
    acc += xs * a[..., _T - _Q, None] - a[..., _TC - _Q:_T - _Q]
    acc[..., 0] += 3 * (a[..., 0] * x[0] + a[..., 3] * x[1] + a[..., 4] * x[2] - a[..., 6])
    acc[..., 1] += 3 * (a[..., 3] * x[0] + a[..., 1] * x[1] + a[..., 5] * x[2] - a[..., 7])
    acc[..., 2] += 3 * (a[..., 4] * x[0] + a[..., 5] * x[1] + a[..., 2] * x[2] - a[..., 8])
    return acc, pot
