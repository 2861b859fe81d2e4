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
def _pp(x, y, z, u, v, w, sx, sy, sz, sm, n, eps2, out):
    """Adds acc and pot at two points, (x, y, z) and (u, v, w), from the first n sources s*
    into out[0:4] and out[4:8]: float32 sums of BLOCK terms added in float64. Pairs at r^2 = 0
    are left out (a particle's own pair without softening)."""
    for j0 in range(0, n, BLOCK):
        ax = ay = az = ap = bx = by = bz = bp = _F0
        # unsigned indices: no negative-index wraparound, so contiguous SIMD loads
        for j in range(np.uint64(j0), np.uint64(min(j0 + BLOCK, n))):
            m = sm[j]
            dx, dy, dz = sx[j] - x, sy[j] - y, sz[j] - z
            r2 = dx * dx + dy * dy + dz * dz + eps2
            ok = r2 > _F0
            inv = _F1 / np.sqrt(r2 if ok else _F1)
            mr = m * inv if ok else _F0
            ap -= mr
            mr3 = mr * inv * inv
            ax += dx * mr3
            ay += dy * mr3
            az += dz * mr3
            dx, dy, dz = sx[j] - u, sy[j] - v, sz[j] - w
            r2 = dx * dx + dy * dy + dz * dz + eps2
            ok = r2 > _F0
            inv = _F1 / np.sqrt(r2 if ok else _F1)
            mr = m * inv if ok else _F0
            bp -= mr
            mr3 = mr * inv * inv
            bx += dx * mr3
            by += dy * mr3
            bz += dz * mr3
        out[0] += ax
        out[1] += ay
        out[2] += az
        out[3] += ap
        out[4] += bx
        out[5] += by
        out[6] += bz
        out[7] += bp


@kernel(fastmath=FAST)
def _pc(x, y, z, u, v, w, cell, n, eps2, out):
    """Adds into out (as _pp) acc and pot at two points, (x, y, z) and (u, v, w), from the first n cells (two targets
    a pass: independent sums and half the loads). Rows of `cell`: centre of mass (3), mass M,
    second moments Q (xx yy zz xy xz yz), tr Q;
    phi = -M/r + trQ/(2 r^3) - 3 r.Q.r/(2 r^5), r = x - com, softened r^2 = |r|^2 + eps^2."""
    cx, cy, cz, cm, qt = cell[0], cell[1], cell[2], cell[3], cell[10]
    q0, q1, q2, q3, q4, q5 = cell[4], cell[5], cell[6], cell[7], cell[8], cell[9]
    half, three, f15, f75 = np.float32(0.5), np.float32(3), np.float32(1.5), np.float32(7.5)
    for j0 in range(0, n, BLOCK):
        ax = ay = az = ap = bx = by = bz = bp = _F0
        for j in range(np.uint64(j0), np.uint64(min(j0 + BLOCK, n))):
            m, trq = cm[j], qt[j]
            xx, yy, zz, xy, xz, yz = q0[j], q1[j], q2[j], q3[j], q4[j], q5[j]
            # first point
            rx, ry, rz = x - cx[j], y - cy[j], z - cz[j]
            inv = _F1 / np.sqrt(rx * rx + ry * ry + rz * rz + eps2)
            inv2 = inv * inv
            inv3 = inv * inv2
            inv5 = inv3 * inv2
            qx = xx * rx + xy * ry + xz * rz
            qy = xy * rx + yy * ry + yz * rz
            qz = xz * rx + yz * ry + zz * rz
            rqr = rx * qx + ry * qy + rz * qz
            ap += (half * trq * inv3 - m * inv) - f15 * rqr * inv5
            s = f15 * trq * inv5 - m * inv3 - f75 * rqr * inv5 * inv2
            q = three * inv5
            ax += s * rx + q * qx
            ay += s * ry + q * qy
            az += s * rz + q * qz
            # second point
            rx, ry, rz = u - cx[j], v - cy[j], w - cz[j]
            inv = _F1 / np.sqrt(rx * rx + ry * ry + rz * rz + eps2)
            inv2 = inv * inv
            inv3 = inv * inv2
            inv5 = inv3 * inv2
            qx = xx * rx + xy * ry + xz * rz
            qy = xy * rx + yy * ry + yz * rz
            qz = xz * rx + yz * ry + zz * rz
            rqr = rx * qx + ry * qy + rz * qz
            bp += (half * trq * inv3 - m * inv) - f15 * rqr * inv5
            s = f15 * trq * inv5 - m * inv3 - f75 * rqr * inv5 * inv2
            q = three * inv5
            bx += s * rx + q * qx
            by += s * ry + q * qy
            bz += s * rz + q * qz
        out[0] += ax
        out[1] += ay
        out[2] += az
        out[3] += ap
        out[4] += bx
        out[5] += by
        out[6] += bz
        out[7] += bp


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
    out = np.empty(8)
    pp = pc = 0
    inv_eps = 1.0 / np.sqrt(np.float64(eps2)) if eps2 > _F0 else 0.0
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
        for i in range(b, b + ng, 2):  # two particles a pass
            i2 = min(i + 1, b + ng - 1)  # an odd last particle pairs with itself
            x, y, z, u, v, w = pos[i, 0], pos[i, 1], pos[i, 2], pos[i2, 0], pos[i2, 1], pos[i2, 2]
            out[:] = 0.0
            _pp(x, y, z, u, v, w, sx, sy, sz, sm, n_src, eps2, out)
            _pc(x, y, z, u, v, w, cell, n_cell, eps2, out)
            for t, k in ((i, 0), (i2, 4)):
                acc[t, 0], acc[t, 1], acc[t, 2] = out[k], out[k + 1], out[k + 2]
                pot[t] = out[k + 3] + mass[t] * inv_eps  # the own pair's -m/eps taken off
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
