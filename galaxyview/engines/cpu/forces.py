"""Tree forces: the walk's interaction lists evaluated on padded blocks, on a few threads.

Each group's pp source list and pc cell list is cut into segments of at most MAX_SOURCES;
segments of similar size are batched into blocks of about BLOCK_ELEMENTS interactions (a few
float32 arrays of that size fit in L2). numpy releases the GIL inside its loops, so blocks run
on worker threads. Per-block results are summed per particle in float64 (np.bincount).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from galaxyview.engines.cpu import kernels
from galaxyview.engines.cpu.groups import group_boxes
from galaxyview.engines.cpu.tree import Tree, ranges
from galaxyview.engines.cpu.walk import Lists, interaction_lists

BLOCK_ELEMENTS = 1 << 16  # padded interactions per block
MAX_SOURCES = 1024  # longest list segment in one block
TARGET_PAD = 8  # segments are batched with others whose group size rounds up alike
WORKERS = min(os.cpu_count() or 1, 8)


def segments(n_per_group: np.ndarray, max_len: int = MAX_SOURCES):
    """Cut each group's list into pieces: (group, offset into its list, length) arrays."""
    pieces = -(-n_per_group // max_len)
    group = np.repeat(np.arange(len(n_per_group)), pieces)
    offset = (np.arange(len(group)) - np.repeat(np.cumsum(pieces) - pieces, pieces)) * max_len
    return group, offset, np.minimum(max_len, n_per_group[group] - offset)


def plan_blocks(n_targets: np.ndarray, n_sources: np.ndarray, budget: int = BLOCK_ELEMENTS):
    """Batch segments of similar size into blocks whose padded size (segments x targets x
    sources) stays within budget: a list of (segment indices, padded targets, sources)."""
    pad_t = -(-n_targets // TARGET_PAD) * TARGET_PAD
    order = np.lexsort((n_sources, pad_t))
    pt, ns = pad_t[order], n_sources[order]
    ends = np.flatnonzero(np.r_[pt[1:] != pt[:-1], True]) + 1 if len(pt) else []
    blocks, i = [], 0
    for end in ends:
        while i < end:
            m = min(end - i, budget // (pt[i] * ns[i]) + 1)
            cost = np.arange(1, m + 1) * pt[i] * ns[i:i + m]
            k = max(1, int(np.searchsorted(cost, budget, side="right")))
            blocks.append((order[i:i + k], int(pt[i]), int(ns[i + k - 1])))
            i += k
    return blocks


def pad_index(first: np.ndarray, count: np.ndarray, width: int):
    """(B, width) indices first + j, clipped to the last valid one, and the valid mask."""
    j = np.arange(width)
    valid = j < count[:, None]
    return first[:, None] + np.minimum(j, count[:, None] - 1), valid


class _Evaluation:
    """The data every block of one force evaluation reads."""

    def __init__(self, tree: Tree, lists: Lists, eps: float, quadrupole: bool):
        self.tree, self.lists, self.quadrupole = tree, lists, quadrupole
        self.eps2 = np.float32(eps) * np.float32(eps)
        self.pos = [np.ascontiguousarray(tree.pos[:, k]) for k in range(3)]
        self.centre = 0.5 * sum(group_boxes(tree))  # the frame of the cell kernel
        n_groups = len(tree.group_begin)
        # pp: the particles of each group's opened leaves, concatenated
        leaf_n = tree.body_count[lists.pp_cell]
        self.src = ranges(tree.body_begin[lists.pp_cell], leaf_n)
        n_src = np.bincount(lists.pp_group, weights=leaf_n, minlength=n_groups).astype(np.int64)
        self.src_first = np.cumsum(n_src) - n_src
        self.self_col = self._self_columns(leaf_n)
        self.pp_seg = segments(n_src)
        # pc: each group's accepted cells; cell data as rows com (3), mass, quad (6)
        n_cell = np.bincount(lists.pc_group, minlength=n_groups)
        self.cell_first = np.cumsum(n_cell) - n_cell
        self.cells = np.concatenate([tree.com, tree.cell_mass[:, None], tree.quad], 1).T.copy()
        self.pc_seg = segments(n_cell)
        self.pp = int((tree.group_count[lists.pp_group] * leaf_n).sum())
        self.pc = int(tree.group_count[lists.pc_group].sum())
        self._local = threading.local()

    def _self_columns(self, leaf_n) -> np.ndarray:
        """Each sorted particle's column in its own group's pp source list (-1: none)."""
        t, (g, c) = self.tree, (self.lists.pp_group, self.lists.pp_cell)
        g_begin, c_begin = t.group_begin[g], t.body_begin[c]
        first = np.maximum(g_begin, c_begin)
        count = np.maximum(np.minimum(g_begin + t.group_count[g], c_begin + leaf_n) - first, 0)
        column0 = np.cumsum(leaf_n) - leaf_n - self.src_first[g]  # pair's first column
        p = ranges(first, count)
        col = np.full(t.n, -1, np.int64)
        col[p] = p + np.repeat(column0 - c_begin, count)
        return col

    def blocks(self):
        """(kind, block) for every pp and pc block."""
        gn = self.tree.group_count
        for kind, (g, _, length) in (("pp", self.pp_seg), ("pc", self.pc_seg)):
            for block in plan_blocks(gn[g], length):
                yield kind, block

    def run(self, job):
        """One block: (target indices, acc (T, 3), pot (T,)) of its real targets."""
        ws = getattr(self._local, "ws", None)
        if ws is None:
            ws = self._local.ws = kernels.Workspace()
        kind, (seg, width, n_src) = job
        group, offset, length = self.pp_seg if kind == "pp" else self.pc_seg
        g, offset, length = group[seg], offset[seg], length[seg]
        tid, tvalid = pad_index(self.tree.group_begin[g], self.tree.group_count[g], width)
        if kind == "pp":
            a, p = self._pp(ws, tid, tvalid, g, offset, length, n_src)
        else:
            a, p = self._pc(ws, tid, g, offset, length, n_src)
        return tid[tvalid], a[tvalid], p[tvalid]

    def _pp(self, ws, tid, tvalid, g, offset, length, n_src):
        sid, svalid = pad_index(self.src_first[g] + offset, length, n_src)
        sid = self.src[sid]
        t = [x[tid][..., None] for x in self.pos]
        s = [x[sid][:, None, :] for x in self.pos]
        sm = np.where(svalid, self.tree.mass[sid], np.float32(0))
        col = self.self_col[tid] - offset[:, None]
        at = np.nonzero(tvalid & (col >= 0) & (col < length[:, None]))
        return kernels.pp_block(ws, t, s, sm, self.eps2, at + (col[at],))

    def _pc(self, ws, tid, g, offset, length, n_cell):
        cid, cvalid = pad_index(self.cell_first[g] + offset, length, n_cell)
        data = self.cells[:, self.lists.pc_cell[cid]]  # (10, B, n_cell)
        data[3:] *= cvalid  # padding: massless copies of a real cell
        centre = self.centre[g]
        x = [p[tid] - centre[:, k, None] for k, p in enumerate(self.pos)]
        c = [data[k] - centre[:, k, None] for k in range(3)]
        q = data[4:] if self.quadrupole else None
        return kernels.pc_block(ws, x, c, data[3], q, self.eps2)


def tree_forces(tree: Tree, theta: float, eps: float, G: float = 1.0, quadrupole: bool = True,
                workers: int | None = None):
    """Accelerations (N, 3) and potentials (N,), float64, in the tree's sorted order, and the
    pp and pc interaction counts. A particle's pair with itself is left out; without
    softening, so are pairs at zero distance. quadrupole=False keeps monopoles only."""
    ev = _Evaluation(tree, interaction_lists(tree, theta), eps, quadrupole)
    jobs = list(ev.blocks())
    workers = WORKERS if workers is None else max(1, int(workers))
    if workers > 1 and len(jobs) > 1:
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(ev.run, jobs))
    else:
        results = [ev.run(job) for job in jobs]
    acc = np.zeros((tree.n, 3))
    pot = np.zeros(tree.n)
    if results:
        t = np.concatenate([r[0] for r in results])
        a = np.concatenate([r[1] for r in results])
        pot = G * np.bincount(t, np.concatenate([r[2] for r in results]), minlength=tree.n)
        for k in range(3):
            acc[:, k] = G * np.bincount(t, a[:, k], minlength=tree.n)
    return acc, pot, ev.pp, ev.pc
