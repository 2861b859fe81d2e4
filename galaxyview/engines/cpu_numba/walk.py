"""The group walk and its forces, compiled: threads over groups, SIMD loops over the lists.

Each group walks the tree depth first from the root with Bonsai's MAC (engines/cpu/walk.py):
a cell is accepted when the distance from the group's bounding box to its centre of mass
exceeds l/theta + delta (compared squared, in float32, unfused, as the numpy walk), an opened
leaf gives its particles, an opened internal cell its children. A cell's walk data is one
32-byte record (centre of mass, r_open^2 and its links), its moments another. The accepted
cells and the leaves' particles are gathered into contiguous rows, padded to whole SIMD
vectors; then the lists are evaluated a BLOCK of terms at a time (it stays in the L1 cache)
for every particle of the group, in float32 SIMD loops (fastmath: vectorised sums, rsqrt):
particles two a pass (one load of a source for both), cells one a pass (with two, a cell's
eleven terms and the sums outgrow 256-bit vectors' 16 registers and spill); each block's sums
added up in float64. Groups are handed to the
threads a chunk at a time (dynamic schedule). The same interactions as the numpy engine: the
same pp and pc.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.cpu_numba.jit import parallel_chunks, use_threads
from galaxyview.model.params import check_eps, check_theta
from galaxyview.numba_setup import FAST, kernel, prange

BLOCK = 512  # list terms summed in float32 before they are added in float64
STACK = 256  # depth-first stack: at most 8 per level for 22 levels
CHUNKS_PER_THREAD = 32  # chunks of groups per thread (load balance, also when a thread waits)
TERMS = 11  # a cell's list row: centre of mass (3), mass, second moments (6), half the trace
PAD = 16  # lists padded to whole SIMD vectors (16 float32)
SKEW = 16  # a list buffer's rows are a whole number of KiB plus one cache line apart: rows a
# multiple of 4 KiB apart share the L1 cache's sets (and its store-to-load address checks)
FAR = np.float32(1e10)  # where the padding's massless terms sit
_F0, _F1 = np.float32(0), np.float32(1)


@kernel(fastmath=FAST)
def _pp(x, y, z, u, v, w, sx, sy, sz, sm, j0, j1, eps2):
    """acc and pot at two points, (x, y, z) and (u, v, w), from sources j0..j1-1 (float32
    sums). Pairs at r^2 = 0 are left out (a particle's own pair without softening)."""
    ax = ay = az = ap = bx = by = bz = bp = _F0
    # unsigned indices: no negative-index wraparound, so contiguous SIMD loads
    for j in range(np.uint64(j0), np.uint64(j1)):
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
    return ax, ay, az, ap, bx, by, bz, bp


@kernel(fastmath=FAST)
def _pp_soft(x, y, z, u, v, w, sx, sy, sz, sm, j0, j1, eps2):
    """_pp where eps2 > 0: no pair is at r^2 = 0, so none is left out (a particle's own
    pair adds -m/eps to its potential, taken off by the caller, and nothing to its acc)."""
    ax = ay = az = ap = bx = by = bz = bp = _F0
    for j in range(np.uint64(j0), np.uint64(j1)):
        m = sm[j]
        dx, dy, dz = sx[j] - x, sy[j] - y, sz[j] - z
        inv = _F1 / np.sqrt(dx * dx + dy * dy + dz * dz + eps2)
        mr = m * inv
        ap -= mr
        mr3 = mr * inv * inv
        ax += dx * mr3
        ay += dy * mr3
        az += dz * mr3
        dx, dy, dz = sx[j] - u, sy[j] - v, sz[j] - w
        inv = _F1 / np.sqrt(dx * dx + dy * dy + dz * dz + eps2)
        mr = m * inv
        bp -= mr
        mr3 = mr * inv * inv
        bx += dx * mr3
        by += dy * mr3
        bz += dz * mr3
    return ax, ay, az, ap, bx, by, bz, bp


@kernel(fastmath=FAST)
def _pc(x, y, z, cell, j0, j1, eps2):
    """acc and pot at (x, y, z) from the cells j0..j1-1 of `cell` (rows: centre of mass (3),
    mass M, second moments Q (xx yy zz xy xz yz), tr Q / 2);
    phi = -M/r + trQ/(2 r^3) - 3 r.Q.r/(2 r^5), r = x - com, softened r^2 = |r|^2 + eps^2:
    with h = trQ/2 and s = r.Q.r/r^2, phi = (h - 1.5 s)/r^3 - M/r and
    acc = -grad phi = (3 (h - 2.5 s)/r^2 - M)/r^3 r + 3/r^5 Q.r. One point a pass: with
    two, 256-bit vectors run out of registers (16)."""
    cx, cy, cz, cm, ch = cell[0], cell[1], cell[2], cell[3], cell[10]
    q0, q1, q2, q3, q4, q5 = cell[4], cell[5], cell[6], cell[7], cell[8], cell[9]
    three, f15, f25 = np.float32(3), np.float32(1.5), np.float32(2.5)
    ax = ay = az = ap = _F0
    for j in range(np.uint64(j0), np.uint64(j1)):
        m, h = cm[j], ch[j]
        xx, yy, zz, xy, xz, yz = q0[j], q1[j], q2[j], q3[j], q4[j], q5[j]
        rx, ry, rz = x - cx[j], y - cy[j], z - cz[j]
        inv = _F1 / np.sqrt(rx * rx + ry * ry + rz * rz + eps2)
        inv2 = inv * inv
        inv3 = inv * inv2
        qx = xx * rx + xy * ry + xz * rz
        qy = xy * rx + yy * ry + yz * rz
        qz = xz * rx + yz * ry + zz * rz
        s = (rx * qx + ry * qy + rz * qz) * inv2
        ap += inv3 * (h - f15 * s) - m * inv
        e = three * inv2
        f = inv3 * (e * (h - f25 * s) - m)
        g = e * inv3
        ax += f * rx + g * qx
        ay += f * ry + g * qy
        az += f * rz + g * qz
    return ax, ay, az, ap


@kernel()
def _lists(box, node, moments, pos, mass, stack, leaves, src, cell):
    """The interaction lists of the group in box (x0 y0 z0 x1 y1 z1): the opened leaves'
    particles into src (x, y, z, m) and the accepted cells into cell, each padded with
    massless far terms to a multiple of PAD; returns their counts (unpadded), which exceed the
    buffers' width less PAD when they did not fit (then only counted). node: the cells' walk
    records (see walk_records), moments: mass, second moments, trQ/2.

    The children of an opened cell are classified without branches: each is written to the
    cell list, whose end moves on when it is accepted; the opened ones' children (first and
    count in one int64: no load of the record when it is popped) are pushed on the stack
    (internal) or on `leaves`, whose particles are copied at the end."""
    x0, y0, z0, x1, y1, z1 = box[0], box[1], box[2], box[3], box[4], box[5]
    nodef = node.view(np.float32)
    cell_room = cell.shape[1] - PAD
    n_cell = n_leaves = top = 0
    first, last = 0, 1  # the root, as the children of an opened cell
    while True:
        for c in range(first, last):
            cx, cy, cz = nodef[c, 0], nodef[c, 1], nodef[c, 2]
            # the MAC: squared distance from the box to the centre of mass > r_open^2
            dx = max(max(x0 - cx, cx - x1), _F0)
            dy = max(max(y0 - cy, cy - y1), _F0)
            dz = max(max(z0 - cz, cz - z1), _F0)
            accept = dx * dx + dy * dy + dz * dz > nodef[c, 3]
            k = min(n_cell, cell_room)
            cell[0, k], cell[1, k], cell[2, k] = cx, cy, cz
            for r in range(8):
                cell[3 + r, k] = moments[c, r]
            n_cell += accept
            leaf = node[c, 5] == 0
            stack[top] = node[c, 4] | (np.int64(node[c, 5]) << 32)  # its children
            top += not (accept or leaf)
            leaves[n_leaves] = c
            n_leaves += not accept and leaf
        if top == 0:
            break
        top -= 1
        first = stack[top] & 0xFFFFFFFF
        last = first + (stack[top] >> 32)
    n_src = 0
    for k in range(n_leaves):
        n_src += node[leaves[k], 7]
    if n_src <= src.shape[1] - PAD:
        n = 0
        for k in range(n_leaves):
            b, nb = node[leaves[k], 6], node[leaves[k], 7]
            for i in range(nb):
                src[0, n + i] = pos[b + i, 0]
                src[1, n + i] = pos[b + i, 1]
                src[2, n + i] = pos[b + i, 2]
                src[3, n + i] = mass[b + i]
            n += nb
        for i in range(n_src, -(-n_src // PAD) * PAD):
            src[0, i] = src[1, i] = src[2, i] = FAR
            src[3, i] = _F0
    if n_cell <= cell_room:
        for i in range(n_cell, -(-n_cell // PAD) * PAD):
            cell[0, i] = cell[1, i] = cell[2, i] = FAR
            for k in range(3, TERMS):
                cell[k, i] = _F0
    return n_src, n_cell


@kernel()
def _rows(rows, need):
    """A list buffer of `rows` rows with room for `need` terms, rows SKEW floats off 4 KiB."""
    return np.empty((rows, -(-need // 1024) * 1024 + SKEW), np.float32)


@kernel()
def _chunk(g0, g1, pos, mass, node, moments, group_begin, group_count, eps2, acc, pot):
    """Walk and evaluate the groups g0..g1-1; returns their (pp, pc) counts."""
    box = np.empty(6, np.float32)  # a group's particles' bounding box (groups.group_boxes)
    stack = np.empty(STACK, np.int64)
    leaves = np.empty(node.shape[0], np.int64)
    src, cell = _rows(4, 4096), _rows(TERMS, 4096)
    total = np.zeros((group_count[g0:g1].max() + 1, 4))  # a group's sums (float64)
    pp = pc = 0
    inv_eps = 1.0 / np.sqrt(np.float64(eps2)) if eps2 > _F0 else 0.0
    for g in range(g0, g1):
        b, ng = group_begin[g], group_count[g]
        for k in range(3):
            box[k] = box[3 + k] = pos[b, k]
        for i in range(b + 1, b + ng):
            for k in range(3):
                box[k] = min(box[k], pos[i, k])
                box[3 + k] = max(box[3 + k], pos[i, k])
        while True:
            n_src, n_cell = _lists(box, node, moments, pos, mass, stack, leaves, src, cell)
            if n_src <= src.shape[1] - PAD and n_cell <= cell.shape[1] - PAD:
                break
            src = _rows(4, max(n_src + PAD, src.shape[1]))
            cell = _rows(TERMS, max(n_cell + PAD, cell.shape[1]))
        pp += ng * n_src
        pc += ng * n_cell
        total[:ng] = 0.0
        sx, sy, sz, sm = src[0], src[1], src[2], src[3]
        n = -(-n_src // PAD) * PAD
        for j0 in range(0, n, BLOCK):  # a block of the list for all the group's particles
            j1 = min(j0 + BLOCK, n)
            for i in range(0, ng, 2):  # two particles a pass; an odd last one twice
                t, t2 = b + i, b + min(i + 1, ng - 1)
                x, y, z = pos[t, 0], pos[t, 1], pos[t, 2]
                u, v, w = pos[t2, 0], pos[t2, 1], pos[t2, 2]
                if eps2 > _F0:
                    s = _pp_soft(x, y, z, u, v, w, sx, sy, sz, sm, j0, j1, eps2)
                else:
                    s = _pp(x, y, z, u, v, w, sx, sy, sz, sm, j0, j1, eps2)
                for k in range(4):
                    total[i, k] += s[k]
                if i + 1 < ng:
                    for k in range(4):
                        total[i + 1, k] += s[4 + k]
        n = -(-n_cell // PAD) * PAD
        for j0 in range(0, n, BLOCK):
            j1 = min(j0 + BLOCK, n)
            for i in range(ng):
                t = b + i
                s = _pc(pos[t, 0], pos[t, 1], pos[t, 2], cell, j0, j1, eps2)
                for k in range(4):
                    total[i, k] += s[k]
        for i in range(ng):
            t = b + i
            acc[t, 0], acc[t, 1], acc[t, 2] = total[i, 0], total[i, 1], total[i, 2]
            pot[t] = total[i, 3] + mass[t] * inv_eps  # the own pair's -m/eps taken off
    return pp, pc


@kernel(parallel=True)
def _walk(pos, mass, node, moments, group_begin, group_count, cuts, eps2, acc, pot,
          counts):
    """Chunk k: the groups cuts[k]..cuts[k+1]-1; counts[k] = its (pp, pc)."""
    for k in prange(cuts.size - 1):
        counts[k, 0], counts[k, 1] = _chunk(cuts[k], cuts[k + 1], pos, mass, node,
                                            moments, group_begin, group_count, eps2, acc, pot)


def walk_records(tree: Tree, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """The cells' walk records, 32 bytes each, (C, 8) int32: centre of mass and r_open^2 as
    float32 bits, then child_begin, child_count, body_begin, body_count; and their moments
    (C, 8) float32: mass, second moments (xx yy zz xy xz yz), trQ/2."""
    ropen = (tree.extent / theta + tree.delta).astype(np.float32)
    node = np.empty((len(ropen), 8), np.int32)
    nodef = node.view(np.float32)
    nodef[:, 0:3], nodef[:, 3] = tree.com, ropen * ropen
    node[:, 4], node[:, 5] = tree.child_begin, tree.child_count
    node[:, 6], node[:, 7] = tree.body_begin, tree.body_count
    moments = np.empty((len(ropen), 8), np.float32)
    moments[:, 0], moments[:, 1:7] = tree.cell_mass, tree.quad
    moments[:, 7] = (tree.quad[:, 0] + tree.quad[:, 1] + tree.quad[:, 2]) * np.float32(0.5)
    return node, moments


def tree_forces(tree: Tree, theta: float, eps: float, G: float = 1.0):
    """Accelerations (N, 3) and potentials (N,), float64, in the tree's sorted order, and the
    pp and pc counts (engines.cpu.forces.tree_forces, compiled)."""
    theta, eps = check_theta(theta), check_eps(eps)
    node, moments = walk_records(tree, theta)
    n_groups = len(tree.group_begin)
    threads = use_threads()
    cuts = np.linspace(0, n_groups, min(n_groups, CHUNKS_PER_THREAD * threads) + 1)
    cuts = np.unique(cuts.astype(np.int64))
    acc, pot = np.empty((tree.n, 3)), np.empty(tree.n)
    counts = np.zeros((len(cuts) - 1, 2), np.int64)
    eps2 = np.float32(eps) * np.float32(eps)
    with parallel_chunks(1):
        _walk(tree.pos, tree.mass, node, moments, tree.group_begin, tree.group_count, cuts,
              eps2, acc, pot, counts)
    if G != 1:
        acc *= G
        pot *= G
    return acc, pot, int(counts[:, 0].sum()), int(counts[:, 1].sum())


@kernel()
def unsort(order, acc_s, pot_s):
    """acc, pot with acc[order] = acc_s, pot[order] = pot_s (numpy's fancy indexing, a few
    times faster)."""
    acc, pot = np.empty_like(acc_s), np.empty_like(pot_s)
    for i in range(order.size):
        j = order[i]
        acc[j, 0], acc[j, 1], acc[j, 2], pot[j] = acc_s[i, 0], acc_s[i, 1], acc_s[i, 2], pot_s[i]
    return acc, pot
