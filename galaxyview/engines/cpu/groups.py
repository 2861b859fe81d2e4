"""Groups: contiguous runs of at most n_crit sorted particles that walk the tree together.

Start from the cells with at most n_crit particles whose parent has more (the root when N <=
n_crit); neighbouring such siblings are merged in key order while the sum stays <= n_crit, so a
group lies inside one parent cell (spatially compact) and is close to full. A deepest-level
leaf with more than n_crit particles (all at one grid point) is cut into runs of n_crit.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from galaxyview.engines.cpu.cells import Tree


def make_groups(tree: Tree, n_crit: int = 64) -> None:
    """Fill tree.group_begin and tree.group_count (in particle order) and tree.n_crit."""
    count = tree.body_count
    small = count <= n_crit
    parent_big = np.r_[True, count[tree.parent[1:]] > n_crit]
    cells = np.flatnonzero(small & parent_big)  # breadth first: siblings adjacent, key order
    begin, cnt = _merge_siblings(tree.body_begin[cells], count[cells], tree.parent[cells], n_crit)
    big_leaves = np.flatnonzero((tree.child_count == 0) & ~small)
    if len(big_leaves):
        pieces = -(-count[big_leaves] // n_crit)
        leaf = np.repeat(big_leaves, pieces)
        k = np.arange(len(leaf)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
        b = tree.body_begin[leaf] + k * n_crit
        c = np.minimum(n_crit, tree.body_begin[leaf] + count[leaf] - b)
        begin, cnt = np.r_[begin, b], np.r_[cnt, c]
    order = np.argsort(begin, kind="stable")
    tree.group_begin = begin[order]
    tree.group_count = cnt[order]
    tree.n_crit = n_crit


def _merge_siblings(begin, count, parent, n_crit):
    """Greedy merge of runs of adjacent siblings (contiguous particles, same parent) while the
    merged count stays <= n_crit. One pass per position in a run (at most 8)."""
    if len(begin) < 2:
        return begin, count
    joins = (parent[1:] == parent[:-1]) & (begin[1:] == begin[:-1] + count[:-1])
    start = np.r_[True, ~joins]  # first cell of each run of mergeable siblings
    run_first = np.flatnonzero(start)
    run = np.cumsum(start) - 1
    pos = np.arange(len(begin)) - run_first[run]
    new = start.copy()  # does cell i start a new group?
    fill = np.zeros(len(run_first), np.int64)  # particles in the run's open group
    for k in range(int(pos.max()) + 1):
        at = np.flatnonzero(pos == k)
        r = run[at]
        opens = (k == 0) | (fill[r] + count[at] > n_crit)
        new[at] = opens
        fill[r] = np.where(opens, 0, fill[r]) + count[at]
    first = np.flatnonzero(new)
    return begin[first], np.add.reduceat(count, first)


def group_boxes(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """Bounding box (lo (G, 3), hi (G, 3), float32) of each group's particles (groups that
    skip particles, as groups_with's, reduce their own alone)."""
    begin, end = tree.group_begin, tree.group_begin + tree.group_count
    pos = tree.pos
    if len(begin) and (begin[0] != 0 or end[-1] != len(pos) or np.any(end[:-1] != begin[1:])):
        pos = np.concatenate([pos, pos[-1:]])  # so that an end may be len(tree.pos)
        cuts = np.ravel(np.c_[begin, end])
        return (np.minimum.reduceat(pos, cuts, axis=0)[0::2],
                np.maximum.reduceat(pos, cuts, axis=0)[0::2])
    return (np.minimum.reduceat(pos, begin, axis=0),
            np.maximum.reduceat(pos, begin, axis=0))


def groups_with(tree: Tree, mask_sorted: np.ndarray) -> Tree:
    """A copy of tree (arrays shared) keeping only the groups that hold a particle of
    `mask_sorted` (bool, sorted order): the groups that walk for an active subset."""
    hit = np.add.reduceat(mask_sorted.astype(np.int32), tree.group_begin) > 0
    return replace(tree, group_begin=tree.group_begin[hit], group_count=tree.group_count[hit])
