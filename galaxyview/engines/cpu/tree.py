"""The octree of the shared layout, built level by level from sorted Morton keys.

A cell at level l holds the particles sharing the top 3l key bits; a cell with more than n_leaf
particles (and l < 21) is split into its non-empty children, in key order. Cells are numbered
breadth first (level 0, then all of level 1 in key order, ...), so children are contiguous.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.cpu import keys as mkeys
from galaxyview.engines.cpu.cells import Tree, ranges
from galaxyview.engines.cpu.groups import make_groups
from galaxyview.engines.cpu.multipoles import compute_multipoles
from galaxyview.errors import EngineError


def checked(pos: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (N, 3) and masses (N,) as contiguous float32, N >= 1, positions finite."""
    pos = np.ascontiguousarray(pos, dtype=np.float32)
    if pos.ndim != 2 or pos.shape[1] != 3 or len(pos) == 0 or len(mass) != len(pos):
        raise EngineError(f"a tree needs positions (N, 3) with N >= 1 and N masses; got "
                          f"{pos.shape} and {np.shape(mass)}")
    if not np.isfinite(pos).all():
        raise EngineError("positions hold NaN or infinite values; no tree can be built")
    return pos, np.ascontiguousarray(mass, dtype=np.float32)


def sort_particles(pos: np.ndarray, mass: np.ndarray) -> dict:
    """The keys_sort phase: bounding cube, keys and the particles in key order."""
    pos, mass = checked(pos, mass)
    lo, size, scale, keys, order = mkeys.sort_by_key(pos)
    return dict(keys=keys, order=order, pos=pos[order], mass=mass[order], lo=lo, L=size,
                scale=scale)


def build_cells(sorted_: dict, n_leaf: int = 16) -> Tree:
    """The build phase: cells level by level from the sorted keys (N >= 1)."""
    keys = sorted_["keys"]
    n = len(keys)
    begin, count, parent = [np.zeros(1, np.int64)], [np.array([n], np.int64)], [np.array([-1])]
    child_begin, child_count = [], []
    first_id = 0  # number of the first cell of the current level
    for lev in range(mkeys.MAX_LEVEL):
        b, c = begin[-1], count[-1]
        split = c > n_leaf
        cb = np.zeros(len(b), np.int64)
        cc = np.zeros(len(b), np.int64)
        child_begin.append(cb)
        child_count.append(cc)
        if not split.any():
            break
        # particles of the cells being split; runs of equal level-(lev+1) prefixes are children
        # (two different parents already differ in their level-lev prefix)
        sb, sc = b[split], c[split]
        idx = ranges(sb, sc)
        prefix = keys[idx] >> np.uint64(63 - 3 * (lev + 1))
        starts = np.flatnonzero(np.r_[True, prefix[1:] != prefix[:-1]])
        owner = np.searchsorted(np.cumsum(sc), starts, side="right")  # split cell of each child
        n_kids = np.bincount(owner, minlength=len(sb))
        next_id = first_id + len(b)
        kid_first = np.zeros(len(sb), np.int64)
        np.cumsum(n_kids[:-1], out=kid_first[1:])
        cb[split] = next_id + kid_first
        cc[split] = n_kids
        begin.append(idx[starts])
        count.append(np.diff(np.r_[starts, len(idx)]))
        parent.append(first_id + np.flatnonzero(split)[owner])
        first_id = next_id
    else:  # level 21 reached: its cells are leaves
        child_begin.append(np.zeros(len(begin[-1]), np.int64))
        child_count.append(np.zeros(len(begin[-1]), np.int64))
    per_level = np.array([len(b) for b in begin])
    level_begin = np.zeros(len(per_level) + 1, np.int64)
    np.cumsum(per_level, out=level_begin[1:])
    tree = Tree(
        keys=keys, order=sorted_["order"], pos=sorted_["pos"], mass=sorted_["mass"],
        lo=sorted_["lo"], L=sorted_["L"], scale=sorted_["scale"], n_leaf=n_leaf,
        level=np.repeat(np.arange(len(per_level), dtype=np.int64), per_level),
        body_begin=np.concatenate(begin), body_count=np.concatenate(count),
        child_begin=np.concatenate(child_begin), child_count=np.concatenate(child_count),
        parent=np.concatenate(parent).astype(np.int64), level_begin=level_begin,
    )
    _geometry(tree)
    return tree


def _geometry(tree: Tree) -> None:
    """Geometric centre and size of every cell from its key prefix: size = L / 2**level."""
    shift = (3 * (mkeys.MAX_LEVEL - tree.level)).astype(np.uint64)
    prefix = (tree.keys[tree.body_begin] >> shift) << shift
    corner = mkeys.decode_keys(prefix).astype(np.float64)  # in grid units of 1/scale
    tree.size = float(tree.L) / 2.0 ** tree.level
    tree.center = (tree.lo.astype(np.float64)
                   + (corner / (2.0 ** (mkeys.MAX_LEVEL - tree.level))[:, None] + 0.5)
                   * tree.size[:, None])


def build_tree(pos: np.ndarray, mass: np.ndarray, n_leaf: int = 16, n_crit: int = 64) -> Tree:
    """Keys, sort, cells, groups and multipoles of float32 positions in one call (N >= 1)."""
    tree = build_cells(sort_particles(pos, mass), n_leaf)
    make_groups(tree, n_crit)
    compute_multipoles(tree)
    return tree


__all__ = ["Tree", "build_cells", "build_tree", "sort_particles"]  # Tree re-exported from cells
