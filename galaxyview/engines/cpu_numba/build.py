"""The tree of the shared layout, compiled: keys, cells, groups and multipoles.

The same cells, groups and multipoles as the numpy engine's (engines/cpu: keys, tree, groups,
multipoles; tested equal), filled into the same `cells.Tree`: keys from float32 positions
without FMA, the stable sort of numpy, cells level by level (breadth first, children
contiguous, in key order), sibling-merged groups, float64 moments stored as float32.
All on one thread: these phases take a few milliseconds, and a parallel region waits for its
slowest thread, which on a busy machine (or beside the window's drawing) can be descheduled.
"""
from __future__ import annotations

import numpy as np
from galaxyview.engines.cpu import keys as mkeys
from galaxyview.engines.cpu import tree as tree_phases
from galaxyview.engines.cpu.cells import Tree
from galaxyview.numba_setup import kernel

MAX_LEVEL = mkeys.MAX_LEVEL
DIGIT = 8  # radix sort: key bits a pass
_U = np.uint64


@kernel()
def _spread(v):
    """Bit b of a 21-bit integer to bit 3b."""
    v &= _U(0x1FFFFF)
    v = (v | (v << _U(32))) & _U(0x1F00000000FFFF)
    v = (v | (v << _U(16))) & _U(0x1F0000FF0000FF)
    v = (v | (v << _U(8))) & _U(0x100F00F00F00F00F)
    v = (v | (v << _U(4))) & _U(0x10C30C30C30C30C3)
    v = (v | (v << _U(2))) & _U(0x1249249249249249)
    return v


@kernel()
def _keys(pos, lo, scale):
    """63-bit Morton keys of float32 positions (keys.grid_coords + keys.morton_keys)."""
    n = pos.shape[0]
    out = np.empty(n, np.uint64)
    top = np.float32(2**MAX_LEVEL - 1)
    for i in range(n):
        key = _U(0)
        for k in range(3):
            c = np.floor((pos[i, k] - lo[k]) * scale)  # float32, two rounded operations
            c = min(max(c, np.float32(0)), top)
            key |= _spread(_U(c)) << _U(2 - k)
        out[i] = key
    return out


@kernel()
def _grow(table, size):
    out = np.zeros((table.shape[0], max(2 * table.shape[1], size)), table.dtype)
    out[:, :table.shape[1]] = table
    return out


@kernel()
def _cells(keys, n_leaf):
    """Cells level by level: rows begin, count, parent, level, child_begin, child_count."""
    n = keys.size
    t = np.zeros((6, max(64, n // 4)), np.int64)
    t[1, 0], t[2, 0] = n, -1
    n_cells, lo, hi, lev = 1, 0, 1, 0
    while lev < MAX_LEVEL:
        shift = _U(60 - 3 * lev)  # the octant digit of level lev + 1
        for c in range(lo, hi):
            if t[1, c] <= n_leaf:
                continue
            s, e = t[0, c], t[0, c] + t[1, c]
            first = n_cells
            while s < e:
                bound = ((keys[s] >> shift) + _U(1)) << shift
                run_end = s + np.searchsorted(keys[s:e], bound)
                if n_cells == t.shape[1]:
                    t = _grow(t, n_cells + 8)
                t[0, n_cells], t[1, n_cells] = s, run_end - s
                t[2, n_cells], t[3, n_cells] = c, lev + 1
                n_cells += 1
                s = run_end
            t[4, c], t[5, c] = first, n_cells - first
        if n_cells == hi:
            break
        lo, hi, lev = hi, n_cells, lev + 1
    return t[:, :n_cells].copy()


@kernel()
def _compact(v):
    out = _U(0)
    for b in range(MAX_LEVEL):
        out |= ((v >> _U(3 * b)) & _U(1)) << _U(b)
    return out


@kernel()
def _geometry(keys, body_begin, level, lo, size_L):
    """Geometric centre (C, 3) and size (C,) of each cell from its key prefix (float64)."""
    n = level.size
    center = np.empty((n, 3))
    size = np.empty(n)
    for c in range(n):
        lev = level[c]
        size[c] = size_L / 2.0 ** lev
        shift = _U(3 * (MAX_LEVEL - lev))
        prefix = (keys[body_begin[c]] >> shift) << shift
        grid = 2.0 ** (MAX_LEVEL - lev)
        for k in range(3):
            corner = np.float64(_compact(prefix >> _U(2 - k)))
            center[c, k] = np.float64(lo[k]) + (corner / grid + 0.5) * size[c]
    return center, size


@kernel()
def _groups(begin, count, parent, child_count, n_crit):
    """Groups as groups.make_groups: the largest cells of <= n_crit particles, adjacent
    siblings merged while they fit; deepest leaves beyond n_crit cut into runs."""
    n_cells = begin.size
    gb = np.empty(begin[0] + count[0] + 1, np.int64)  # at most one group per particle
    gc = np.empty_like(gb)
    ng = 0
    last = -1  # the previous chosen cell
    for c in range(n_cells):
        if count[c] > n_crit:
            if child_count[c] == 0:  # a deepest leaf holding one grid point
                for s in range(begin[c], begin[c] + count[c], n_crit):
                    gb[ng], gc[ng] = s, min(n_crit, begin[c] + count[c] - s)
                    ng += 1
                last = -1
            continue
        if c > 0 and count[parent[c]] <= n_crit:
            continue
        joins = last >= 0 and parent[c] == parent[last] and begin[c] == begin[last] + count[last]
        if joins and gc[ng - 1] + count[c] <= n_crit:
            gc[ng - 1] += count[c]
        else:
            gb[ng], gc[ng] = begin[c], count[c]
            ng += 1
        last = c
    order = np.argsort(gb[:ng])
    return gb[:ng][order], gc[:ng][order]


@kernel()
def _moments(pos, mass, begin, count, child_begin, child_count, center):
    """Mass, centre of mass and second moments about it (float64), deepest cells first; the
    MAC's delta and extent from the box of each cell's particles (engines.cpu.multipoles)."""
    n = begin.size
    m = np.zeros(n)
    com = np.zeros((n, 3))
    quad = np.zeros((n, 6))
    lo = np.empty((n, 3))
    hi = np.empty((n, 3))
    first = np.empty(3)
    second = np.empty(6)
    d = np.empty(3)
    for c in range(n - 1, -1, -1):
        mc = 0.0
        first[:] = 0.0
        second[:] = 0.0
        lo[c, :] = np.inf
        hi[c, :] = -np.inf
        if child_count[c] == 0:
            for i in range(begin[c], begin[c] + count[c]):
                mi = np.float64(mass[i])
                for k in range(3):
                    x = np.float64(pos[i, k])
                    lo[c, k] = min(lo[c, k], x)
                    hi[c, k] = max(hi[c, k], x)
                    d[k] = x - center[c, k]
                mc += mi
                for k in range(3):
                    first[k] += mi * d[k]
                second[0] += mi * (d[0] * d[0])
                second[1] += mi * (d[1] * d[1])
                second[2] += mi * (d[2] * d[2])
                second[3] += mi * (d[0] * d[1])
                second[4] += mi * (d[0] * d[2])
                second[5] += mi * (d[1] * d[2])
        else:
            for j in range(child_begin[c], child_begin[c] + child_count[c]):
                mj = m[j]
                for k in range(3):
                    lo[c, k] = min(lo[c, k], lo[j, k])
                    hi[c, k] = max(hi[c, k], hi[j, k])
                    d[k] = com[j, k] - center[c, k]
                mc += mj
                for k in range(3):
                    first[k] += mj * d[k]
                second[0] += quad[j, 0] + mj * (d[0] * d[0])
                second[1] += quad[j, 1] + mj * (d[1] * d[1])
                second[2] += quad[j, 2] + mj * (d[2] * d[2])
                second[3] += quad[j, 3] + mj * (d[0] * d[1])
                second[4] += quad[j, 4] + mj * (d[0] * d[2])
                second[5] += quad[j, 5] + mj * (d[1] * d[2])
        safe = mc if mc > 0 else 1.0
        for k in range(3):
            d[k] = first[k] / safe  # the shift to the centre of mass
            com[c, k] = center[c, k] + d[k]
        m[c] = mc
        quad[c, 0] = second[0] - first[0] * d[0]
        quad[c, 1] = second[1] - first[1] * d[1]
        quad[c, 2] = second[2] - first[2] * d[2]
        quad[c, 3] = second[3] - first[0] * d[1]
        quad[c, 4] = second[4] - first[0] * d[2]
        quad[c, 5] = second[5] - first[1] * d[2]
    extent = np.empty(n)
    delta = np.empty(n)
    for c in range(n):
        e, s2 = 0.0, 0.0
        for k in range(3):
            e = max(e, hi[c, k] - lo[c, k])
            dk = com[c, k] - 0.5 * (lo[c, k] + hi[c, k])
            s2 += dk * dk
        extent[c], delta[c] = e, np.sqrt(s2)
    return m, com, quad, delta, extent


@kernel()
def _extent(pos):
    """Per-axis minimum and maximum of float32 positions (N, 3), N >= 1."""
    lo, hi = pos[0].copy(), pos[0].copy()
    for i in range(1, pos.shape[0]):
        for k in range(3):
            lo[k] = min(lo[k], pos[i, k])
            hi[k] = max(hi[k], pos[i, k])
    return lo, hi


@kernel()
def _radix_argsort(keys):
    """(order, sorted keys) of uint64 keys: a stable LSD radix sort, DIGIT bits a pass, so the
    order is numpy's stable argsort's. Every digit's histogram comes from one pass over the
    keys; passes where all keys share the digit are skipped. One thread: at 262144 keys about
    as fast as several, and no thread has to wait for another on a busy machine."""
    n = keys.size
    buckets = 1 << DIGIT
    passes = (64 + DIGIT - 1) // DIGIT
    mask = _U(buckets - 1)
    hist = np.zeros((passes, buckets), np.int64)
    for i in range(n):
        key = keys[i]
        for p in range(passes):
            hist[p, (key >> _U(p * DIGIT)) & mask] += 1
    k, o = keys.copy(), np.arange(n)
    k_to, o_to = np.empty_like(k), np.empty_like(o)
    at = np.empty(buckets, np.int64)
    for p in range(passes):
        if hist[p].max() == n:
            continue
        s = 0
        for d in range(buckets):
            at[d] = s
            s += hist[p, d]
        shift = _U(p * DIGIT)
        for i in range(n):
            key = k[i]
            d = (key >> shift) & mask
            j = at[d]
            at[d] = j + 1
            k_to[j] = key
            o_to[j] = o[i]
        k, k_to = k_to, k
        o, o_to = o_to, o
    return o, k


@kernel()
def _take(pos, mass, order):
    """pos[order], mass[order]."""
    p, m = np.empty_like(pos), np.empty_like(mass)
    for i in range(order.size):
        j = order[i]
        p[i, 0], p[i, 1], p[i, 2], m[i] = pos[j, 0], pos[j, 1], pos[j, 2], mass[j]
    return p, m


def sort_particles(pos: np.ndarray, mass: np.ndarray) -> dict:
    """The keys_sort phase (engines.cpu.tree.sort_particles compiled: the extent, the keys,
    a radix sort and the gather)."""
    pos, mass = tree_phases.checked(pos, mass)
    lo, size, scale = mkeys.cube(*_extent(pos))
    order, keys = _radix_argsort(_keys(pos, lo, scale))
    pos, mass = _take(pos, mass, order)
    return dict(keys=keys, order=order, pos=pos, mass=mass, lo=lo, L=size, scale=scale)


def build_cells(sorted_: dict, n_leaf: int = 16, n_crit: int = 64) -> Tree:
    """The build phase: cells, their geometry and the groups."""
    keys = sorted_["keys"]
    begin, count, parent, level, child_begin, child_count = _cells(keys, n_leaf)
    per_level = np.bincount(level)
    level_begin = np.zeros(len(per_level) + 1, np.int64)
    np.cumsum(per_level, out=level_begin[1:])
    tree = Tree(keys=keys, order=sorted_["order"], pos=sorted_["pos"], mass=sorted_["mass"],
                lo=sorted_["lo"], L=sorted_["L"], scale=sorted_["scale"], n_leaf=n_leaf,
                level=level, body_begin=begin, body_count=count, child_begin=child_begin,
                child_count=child_count, parent=parent, level_begin=level_begin)
    tree.center, tree.size = _geometry(keys, begin, level, tree.lo, float(tree.L))
    tree.group_begin, tree.group_count = _groups(begin, count, parent, child_count, n_crit)
    tree.n_crit = n_crit
    return tree


def compute_multipoles(tree: Tree) -> None:
    """The multipoles phase: cell_mass, com, quad (float32), extent and delta (float64)."""
    m, com, quad, delta, extent = _moments(tree.pos, tree.mass, tree.body_begin,
                                           tree.body_count, tree.child_begin,
                                           tree.child_count, tree.center)
    tree.cell_mass = m.astype(np.float32)
    tree.com = com.astype(np.float32)
    tree.quad = quad.astype(np.float32)
    tree.delta = delta
    tree.extent = extent


def build_tree(pos: np.ndarray, mass: np.ndarray, n_leaf: int = 16, n_crit: int = 64) -> Tree:
    """Keys, sort, cells, groups and multipoles in one call (N >= 1)."""
    tree = build_cells(sort_particles(pos, mass), n_leaf, n_crit)
    compute_multipoles(tree)
    return tree
