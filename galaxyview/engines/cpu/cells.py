"""The tree's data (Tree: sorted particles, cells, multipoles, groups) and cell index ranges.

Shared by the modules that fill a Tree (tree, groups, multipoles) and those that read it (walk,
forces); tree.build_tree runs the phases in order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Tree:
    """Sorted particles, cells (arrays indexed by cell number), multipoles and groups.

    Particles: keys (N,) uint64 sorted; order[i] = original index of sorted particle i;
    pos (N, 3) float32 and mass (N,) float32 in sorted order; lo, L, scale: the bounding cube.
    Cells: level, body_begin, body_count, child_begin, child_count (0 for a leaf), parent (-1
    for the root), all int64; center (C, 3) and size (C,) float64 (geometric, from the key
    prefix); level_begin[l]: first cell of level l (level_begin[-1] = number of cells).
    Multipoles (float64 sums stored as float32): cell_mass, com (C, 3), quad (C, 6) second
    moments about the centre of mass in the order xx, yy, zz, xy, xz, yz. The MAC's l and delta
    (as Bonsai's): extent (C,) float64, the longest side of the box of the cell's particles, and
    delta = |com - the centre of that box|.
    Groups: group_begin, group_count (contiguous runs of sorted particles, <= n_crit).
    """

    keys: np.ndarray
    order: np.ndarray
    pos: np.ndarray
    mass: np.ndarray
    lo: np.ndarray
    L: np.float32
    scale: np.float32
    n_leaf: int
    level: np.ndarray
    body_begin: np.ndarray
    body_count: np.ndarray
    child_begin: np.ndarray
    child_count: np.ndarray
    parent: np.ndarray
    level_begin: np.ndarray
    center: np.ndarray = None
    size: np.ndarray = None
    cell_mass: np.ndarray = None
    com: np.ndarray = None
    quad: np.ndarray = None
    delta: np.ndarray = None
    extent: np.ndarray = None
    group_begin: np.ndarray = None
    group_count: np.ndarray = None
    n_crit: int = 0

    @property
    def n(self) -> int:
        return len(self.keys)

    @property
    def n_cells(self) -> int:
        return len(self.level)

    @property
    def depth(self) -> int:
        return int(self.level[-1])


def ranges(begin: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Concatenation of arange(b, b + c) for each (b, c), without a Python loop."""
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    nz = count > 0
    begin, count = begin[nz], count[nz]
    step = np.ones(total, dtype=np.int64)
    starts = np.zeros(len(count), dtype=np.int64)
    np.cumsum(count[:-1], out=starts[1:])
    step[0] = begin[0]
    step[starts[1:]] = begin[1:] - (begin[:-1] + count[:-1] - 1)
    return np.cumsum(step)
