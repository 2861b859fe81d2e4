"""The group walk and its forces, compiled: threads over groups, SIMD loops over the lists.

Each group walks the tree depth first from the root with Bonsai's MAC (engines/cpu/walk.py):
a cell is accepted when the distance from the group's bounding box to its centre of mass
exceeds l/theta + delta (compared squared, in float32, unfused, as the numpy walk), an opened
leaf gives its particles, an opened internal cell its children. The accepted cells (centre of
mass, mass, second moments, trace) and the leaves' particles are gathered into contiguous
arrays, then every particle of the group runs down both lists in float32 (fastmath: vectorised
sums), in blocks of BLOCK terms added up in float64. Groups are handed to the threads a chunk
at a time (dynamic schedule). The same interactions as the numpy engine: the same pp and pc.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.cpu.groups import group_boxes
from galaxyview.engines.cpu_numba.jit import FAST, kernel, parallel_chunks, use_threads
from galaxyview.model.params import check_eps, check_theta

BLOCK = 512  # list terms summed in float32 before they are added in float64
STACK = 256  # depth-first stack: at most 7 per level + 8 for 22 levels
CHUNKS_PER_THREAD = 8  # chunks of groups per thread (load balance)
_F0, _F1 = np.float32(0), np.float32(1)


@kernel(fastmath=FAST)
def _pp(x, y, z, m, sx, sy, sz, sm, n, eps2):
    """acc and pot at (x, y, z) of a particle of mass m from the first n sources s* (which
    hold the particle itself): float32 sums of BLOCK terms added in float64; pairs at r^2 = 0
    left out (the own pair without softening), the own pair's potential taken off."""
    ax = ay = az = ph = 0.0
    for j0 in range(0, n, BLOCK):
        bx = by = bz = bp = _F0
        # unsigned indices: no negative-index wraparound, so contiguous SIMD loads
        for j in range(np.uint64(j0), np.uint64(min(j0 + BLOCK, n))):
            dx, dy, dz = sx[j] - x, sy[j] - y, sz[j] - z
            r2 = dx * dx + dy * dy + dz * dz + eps2
            ok = r2 > _F0
            inv = _F1 / np.sqrt(r2 if ok else _F1)
            mr = sm[j] * inv if ok else _F0
            bp -= mr
            mr3 = mr * inv * inv
            bx += dx * mr3
            by += dy * mr3
            bz += dz * mr3
        ax += bx
        ay += by
        az += bz
        ph += bp
    if eps2 > _F0:  # the own pair: no force, potential -m/eps
        ph += m / np.sqrt(np.float64(eps2))
    return ax, ay, az, ph


@kernel(fastmath=FAST)
def _pc(x, y, z, cell, n, eps2):
    """acc and pot at (x, y, z) from the first n cells: rows of `cell` are the centre of mass
    (3), mass M, second moments Q (xx yy zz xy xz yz) and tr Q;
    phi = -M/r + trQ/(2 r^3) - 3 r.Q.r/(2 r^5), r = x - com, softened r^2 = |r|^2 + eps^2."""
    cx, cy, cz, cm, qt = cell[0], cell[1], cell[2], cell[3], cell[10]
    q0, q1, q2, q3, q4, q5 = cell[4], cell[5], cell[6], cell[7], cell[8], cell[9]
    ax = ay = az = ph = 0.0
    for j0 in range(0, n, BLOCK):
        bx = by = bz = bp = _F0
        for j in range(np.uint64(j0), np.uint64(min(j0 + BLOCK, n))):
            rx, ry, rz = x - cx[j], y - cy[j], z - cz[j]
            inv = _F1 / np.sqrt(rx * rx + ry * ry + rz * rz + eps2)
            inv2 = inv * inv
            inv3 = inv * inv2
            inv5 = inv3 * inv2
            qx = q0[j] * rx + q3[j] * ry + q4[j] * rz
            qy = q3[j] * rx + q1[j] * ry + q5[j] * rz
            qz = q4[j] * rx + q5[j] * ry + q2[j] * rz
            rqr = rx * qx + ry * qy + rz * qz
            m, trq = cm[j], qt[j]
            bp += (np.float32(0.5) * trq * inv3 - m * inv) - np.float32(1.5) * rqr * inv5
            s = np.float32(1.5) * trq * inv5 - m * inv3 - np.float32(7.5) * rqr * inv5 * inv2
            q = np.float32(3) * inv5
            bx += s * rx + q * qx
            by += s * ry + q * qy
            bz += s * rz + q * qz
        ax += bx
        ay += by
        az += bz
        ph += bp
    return ax, ay, az, ph


@kernel()
def _lists(box, cells, r2open, child_begin, child_count, body_begin, body_count, pos, mass,
           stack, src, cell):
    """The interaction lists of the group in box (x0 y0 z0 x1 y1 z1): the opened leaves'
    particles into src (x, y, z, m) and the accepted cells into cell; returns their counts,
    which exceed the buffers' width when they did not fit (then only counted)."""
    x0, y0, z0, x1, y1, z1 = box[0], box[1], box[2], box[3], box[4], box[5]
    n_src = n_cell = 0
    stack[0], top = 0, 1
    while top > 0:
        top -= 1
        c = stack[top]
        # the MAC: squared distance from the box to the centre of mass > r_open^2
        dx = max(max(x0 - cells[0, c], cells[0, c] - x1), _F0)
        dy = max(max(y0 - cells[1, c], cells[1, c] - y1), _F0)
        dz = max(max(z0 - cells[2, c], cells[2, c] - z1), _F0)
        if dx * dx + dy * dy + dz * dz > r2open[c]:
            if n_cell < cell.shape[1]:
                for r in range(11):
                    cell[r, n_cell] = cells[r, c]
            n_cell += 1
        elif child_count[c] == 0:
            b, nb = body_begin[c], body_count[c]
            if n_src + nb <= src.shape[1]:
                for i in range(nb):
                    src[0, n_src + i] = pos[b + i, 0]
                    src[1, n_src + i] = pos[b + i, 1]
                    src[2, n_src + i] = pos[b + i, 2]
                    src[3, n_src + i] = mass[b + i]
            n_src += nb
        else:
            for j in range(child_count[c]):
                stack[top + j] = child_begin[c] + j
            top += child_count[c]
    return n_src, n_cell


@kernel()
def _chunk(g0, g1, pos, mass, box, cells, r2open, child_begin, child_count, body_begin,
           body_count, group_begin, group_count, eps2, acc, pot):
    """Walk and evaluate the groups g0..g1-1; returns their (pp, pc) counts."""
    stack = np.empty(STACK, np.int64)
    src = np.empty((4, 4096), np.float32)
    cell = np.empty((11, 2048), np.float32)
    pp = pc = 0
    for g in range(g0, g1):
        while True:
            n_src, n_cell = _lists(box[g], cells, r2open, child_begin, child_count,
                                   body_begin, body_count, pos, mass, stack, src, cell)
            if n_src <= src.shape[1] and n_cell <= cell.shape[1]:
                break
            src = np.empty((4, max(n_src, src.shape[1])), np.float32)
            cell = np.empty((11, max(n_cell, cell.shape[1])), np.float32)
        b, ng = group_begin[g], group_count[g]
        pp += ng * n_src
        pc += ng * n_cell
        sx, sy, sz, sm = src[0], src[1], src[2], src[3]
        for i in range(b, b + ng):
            x, y, z = pos[i, 0], pos[i, 1], pos[i, 2]
            ax, ay, az, ph = _pp(x, y, z, mass[i], sx, sy, sz, sm, n_src, eps2)
            cx, cy, cz, cp = _pc(x, y, z, cell, n_cell, eps2)
            acc[i, 0], acc[i, 1], acc[i, 2] = ax + cx, ay + cy, az + cz
            pot[i] = ph + cp
    return pp, pc


@kernel(parallel=True)
def _walk(pos, mass, box, cells, r2open, child_begin, child_count, body_begin,
          body_count, group_begin, group_count, cuts, eps2, acc, pot, counts):
    """Chunk k: the groups cuts[k]..cuts[k+1]-1; counts[k] = its (pp, pc)."""
    for k in prange(cuts.size - 1):
        counts[k, 0], counts[k, 1] = _chunk(
            cuts[k], cuts[k + 1], pos, mass, box, cells, r2open, child_begin, child_count,
            body_begin, body_count, group_begin, group_count, eps2, acc, pot)


def tree_forces(tree: Tree, theta: float, eps: float, G: float = 1.0):
    """Accelerations (N, 3) and potentials (N,), float64, in the tree's sorted order, and the
    pp and pc counts (engines.cpu.forces.tree_forces, compiled)."""
    theta, eps = check_theta(theta), check_eps(eps)
    ropen = (tree.size / theta + tree.delta).astype(np.float32)
    trq = tree.quad[:, 0] + tree.quad[:, 1] + tree.quad[:, 2]
    cells = np.concatenate([tree.com, tree.cell_mass[:, None], tree.quad, trq[:, None]], 1).T.copy()
    box = np.concatenate(group_boxes(tree), axis=1)
    n_groups = len(tree.group_begin)
    threads = use_threads()
    cuts = np.linspace(0, n_groups, min(n_groups, CHUNKS_PER_THREAD * threads) + 1)
    cuts = np.unique(cuts.astype(np.int64))
    acc, pot = np.empty((tree.n, 3)), np.empty(tree.n)
    counts = np.zeros((len(cuts) - 1, 2), np.int64)
    eps2 = np.float32(eps) * np.float32(eps)
    with parallel_chunks(1):
        _walk(tree.pos, tree.mass, box, cells, ropen * ropen, tree.child_begin,
              tree.child_count, tree.body_begin, tree.body_count, tree.group_begin,
              tree.group_count, cuts, eps2, acc, pot, counts)
    if G != 1:
        acc *= G
        pot *= G
    return acc, pot, int(counts[:, 0].sum()), int(counts[:, 1].sum())
