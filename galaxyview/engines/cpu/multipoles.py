"""Cell multipoles: mass, centre of mass and second moments about it, bottom-up in float64.

Leaves sum their particles (relative to the cell centre, so nothing cancels); parents combine
their children with the parallel-axis theorem, one level at a time. Q = sum m (x-c)_i (x-c)_j
with c the centre of mass, not traceless, stored as xx, yy, zz, xy, xz, yz. The box of each
cell's particles gives the MAC its l (the box's longest side) and delta (from the centre of
mass to the box's centre), as Bonsai's: a cell whose particles fill a corner of it opens late.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.cpu.cells import Tree

_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))  # Q component order


def _outer6(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The six (i, j) products of the rows of a and b, (n, 6)."""
    return np.stack([a[:, i] * b[:, j] for i, j in _PAIRS], axis=1)


def _finish(mass, first, second, center):
    """Centre of mass and moments about it from sums about `center` (mass-less: the centre)."""
    safe = np.where(mass > 0, mass, 1.0)
    shift = first / safe[:, None]
    com = center + shift
    quad = second - _outer6(first, shift)
    return com, quad


def compute_multipoles(tree: Tree) -> None:
    """Fill tree.cell_mass, com, quad (float32), extent and delta (float64)."""
    n_cells = tree.n_cells
    mass = np.zeros(n_cells)
    com = np.zeros((n_cells, 3))
    quad = np.zeros((n_cells, 6))

    # leaves from their particles; leaves partition the sorted particles
    leaves = np.flatnonzero(tree.child_count == 0)
    leaves = leaves[np.argsort(tree.body_begin[leaves], kind="stable")]
    m = tree.mass.astype(np.float64)
    rel = tree.pos - tree.center[np.repeat(leaves, tree.body_count[leaves])]
    cuts = tree.body_begin[leaves]
    box_lo, box_hi = np.empty((n_cells, 3)), np.empty((n_cells, 3))  # the particles' boxes
    box_lo[leaves] = np.minimum.reduceat(tree.pos, cuts, axis=0)
    box_hi[leaves] = np.maximum.reduceat(tree.pos, cuts, axis=0)
    mass[leaves] = np.add.reduceat(m, cuts)
    first = np.add.reduceat(m[:, None] * rel, cuts, axis=0)
    second = np.add.reduceat(m[:, None] * _outer6(rel, rel), cuts, axis=0)
    com[leaves], quad[leaves] = _finish(mass[leaves], first, second, tree.center[leaves])

    # internal cells, deepest level first; the children of level l's internal cells are
    # exactly the cells of level l + 1, in order
    for lev in range(len(tree.level_begin) - 3, -1, -1):
        lo, hi = tree.level_begin[lev], tree.level_begin[lev + 1]
        cells = lo + np.flatnonzero(tree.child_count[lo:hi] > 0)
        if not len(cells):
            continue
        kids = slice(tree.level_begin[lev + 1], tree.level_begin[lev + 2])
        cuts = tree.child_begin[cells] - tree.level_begin[lev + 1]
        d = com[kids] - np.repeat(tree.center[cells], tree.child_count[cells], axis=0)
        mk = mass[kids]
        box_lo[cells] = np.minimum.reduceat(box_lo[kids], cuts, axis=0)
        box_hi[cells] = np.maximum.reduceat(box_hi[kids], cuts, axis=0)
        mass[cells] = np.add.reduceat(mk, cuts)
        first = np.add.reduceat(mk[:, None] * d, cuts, axis=0)
        second = np.add.reduceat(quad[kids] + mk[:, None] * _outer6(d, d), cuts, axis=0)
        com[cells], quad[cells] = _finish(mass[cells], first, second, tree.center[cells])

    tree.cell_mass = mass.astype(np.float32)
    tree.com = com.astype(np.float32)
    tree.quad = quad.astype(np.float32)
    tree.extent = (box_hi - box_lo).max(axis=1)
    tree.delta = np.sqrt(((com - 0.5 * (box_lo + box_hi)) ** 2).sum(axis=1))
