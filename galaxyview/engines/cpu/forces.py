"""Tree forces: walk and evaluate the interaction lists of the groups, on a few threads.

The groups are split into contiguous parts; each part is walked and evaluated on its own (a
worker thread: numpy releases the GIL inside its loops) and writes only its own particles.
Within a part, each group's pp source list and pc cell list is cut into segments of at most
MAX_SOURCES, and segments of similar size are batched into padded blocks of about
BLOCK_ELEMENTS interactions. Block results are summed per particle in float64 (np.bincount).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from galaxyview.engines.cpu import kernels, threads
from galaxyview.engines.cpu.cells import Tree, ranges
from galaxyview.engines.cpu.groups import group_boxes
from galaxyview.engines.cpu.walk import Walker
from galaxyview.model.params import check_eps, check_theta

BLOCK_ELEMENTS = 1 << 18  # padded interactions per block (measured best on a 1 MB L2)
MAX_SOURCES = 256  # longest list segment in one block (keeps BLAS calls single-threaded)
TARGET_PAD = 8  # segments are batched with others whose group size rounds up alike
PARTS_PER_WORKER = 4  # more parts than workers balance the load
MIN_PART_GROUPS = 32  # smaller parts cost more in overhead than they gain


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


class _Shared:
    """What every part of one force evaluation reads."""

    def __init__(self, tree: Tree, theta: float, eps: float, quadrupole: bool, amac=None):
        self.tree, self.quadrupole = tree, quadrupole
        self.eps2 = np.float32(eps) * np.float32(eps)
        self.pos = [np.ascontiguousarray(tree.pos[:, k]) for k in range(3)]
        self.centre = 0.5 * sum(group_boxes(tree))  # the frame of the cell kernel
        self.cells = np.concatenate([tree.com, tree.cell_mass[:, None], tree.quad], 1).T.copy()
        self.walker = Walker(tree, theta, amac)
        self.local = threading.local()

    def workspace(self) -> kernels.Workspace:
        ws = getattr(self.local, "ws", None)
        if ws is None:
            ws = self.local.ws = kernels.Workspace()
        return ws


class _Part:
    """Groups g0..g1-1 (particles p0..p1-1): their interaction lists and blocks."""

    def __init__(self, sh: _Shared, g0: int, g1: int):
        t = sh.tree
        self.sh, self.g0 = sh, g0
        self.p0 = t.group_begin[g0]
        self.p1 = t.group_begin[g1 - 1] + t.group_count[g1 - 1]
        self.begin, self.count = t.group_begin[g0:g1], t.group_count[g0:g1]
        lists = sh.walker.lists(np.arange(g0, g1))
        n = g1 - g0
        # pp: the particles of each group's opened leaves, concatenated
        pg, leaf = lists.pp_group - g0, lists.pp_cell
        leaf_n = t.body_count[leaf]
        self.src = ranges(t.body_begin[leaf], leaf_n)
        n_src = np.bincount(pg, weights=leaf_n, minlength=n).astype(np.int64)
        self.src_first = np.cumsum(n_src) - n_src
        self.self_col = self._self_columns(pg, t.body_begin[leaf], leaf_n)
        self.pp_seg = segments(n_src)
        # pc: each group's accepted cells
        self.pc_cell = lists.pc_cell
        n_cell = np.bincount(lists.pc_group - g0, minlength=n)
        self.cell_first = np.cumsum(n_cell) - n_cell
        self.pc_seg = segments(n_cell)
        self.pp = int((self.count[pg] * leaf_n).sum())
        self.pc = int((self.count * n_cell).sum())

    def _self_columns(self, g, c_begin, leaf_n) -> np.ndarray:
        """Each particle's column in its own group's pp source list (-1: none)."""
        g_begin = self.begin[g]
        first = np.maximum(g_begin, c_begin)
        count = np.maximum(np.minimum(g_begin + self.count[g], c_begin + leaf_n) - first, 0)
        column0 = np.cumsum(leaf_n) - leaf_n - self.src_first[g]  # pair's first column
        p = ranges(first, count)
        col = np.full(self.p1 - self.p0, -1, np.int64)
        col[p - self.p0] = p + np.repeat(column0 - c_begin, count)
        return col

    def evaluate(self, acc: np.ndarray, pot: np.ndarray) -> None:
        """Write this part's accelerations and potentials into acc and pot (sorted order)."""
        ws, results = self.sh.workspace(), []
        for kind, seg in (("pp", self.pp_seg), ("pc", self.pc_seg)):
            g, offset, length = seg
            for blk, width, n_src in plan_blocks(self.count[g], length):
                gb, off, ln = g[blk], offset[blk], length[blk]
                tid, tvalid = pad_index(self.begin[gb], self.count[gb], width)
                if kind == "pp":
                    a, p = self._pp(ws, tid, tvalid, gb, off, ln, n_src)
                else:
                    a, p = self._pc(ws, tid, gb, off, ln, n_src)
                results.append((tid[tvalid] - self.p0, a[tvalid], p[tvalid]))
        if not results:
            return
        n = self.p1 - self.p0
        t = np.concatenate([r[0] for r in results])
        a = np.concatenate([r[1] for r in results])
        pot[self.p0:self.p1] = np.bincount(t, np.concatenate([r[2] for r in results]), n)
        for k in range(3):
            acc[self.p0:self.p1, k] = np.bincount(t, a[:, k], n)

    def _pp(self, ws, tid, tvalid, g, offset, length, n_src):
        sh = self.sh
        sid, svalid = pad_index(self.src_first[g] + offset, length, n_src)
        sid = self.src[sid]
        t, s = sh.tree.pos[tid], sh.tree.pos[sid]
        sm = np.where(svalid, sh.tree.mass[sid], np.float32(0))
        col = self.self_col[tid - self.p0] - offset[:, None]
        at = np.nonzero(tvalid & (col >= 0) & (col < length[:, None]))
        return kernels.pp_block(ws, t, s, sm, sh.eps2, at + (col[at],))

    def _pc(self, ws, tid, g, offset, length, n_cell):
        sh = self.sh
        cid, cvalid = pad_index(self.cell_first[g] + offset, length, n_cell)
        data = sh.cells[:, self.pc_cell[cid]]  # (10, B, n_cell)
        data[3:] *= cvalid  # padding: massless copies of a real cell
        centre = sh.centre[self.g0 + g]
        x = [p[tid] - centre[:, k, None] for k, p in enumerate(sh.pos)]
        return kernels.pc_block(ws, x, data, centre, sh.eps2, sh.quadrupole)


def tree_forces(tree: Tree, theta: float, eps: float, G: float = 1.0, quadrupole: bool = True,
                workers: int | None = None, amac=None):
    """Accelerations (N, 3) and potentials (N,), float64, in the tree's sorted order, and the
    pp and pc interaction counts. A particle's pair with itself is left out; without
    softening, so are pairs at zero distance. quadrupole=False keeps monopoles only.
    workers: threads (default threads.workers()); amac: walk.AccelerationMAC for the
    relative MAC (default Bonsai's). Only the particles of tree's groups get forces."""
    sh = _Shared(tree, check_theta(theta), check_eps(eps), quadrupole, amac)
    workers = threads.workers() if workers is None else max(1, int(workers))
    n_groups = len(tree.group_begin)
    n_parts = 1 if workers == 1 else \
        max(1, min(n_groups // MIN_PART_GROUPS, PARTS_PER_WORKER * workers))
    cuts = np.linspace(0, n_groups, n_parts + 1).astype(int)
    acc, pot = np.zeros((tree.n, 3)), np.zeros(tree.n)

    def run(k):
        part = _Part(sh, cuts[k], cuts[k + 1])
        part.evaluate(acc, pot)
        return part.pp, part.pc

    if n_parts > 1:
        with ThreadPoolExecutor(workers) as pool:
            counts = list(pool.map(run, range(n_parts)))
    else:
        counts = [run(0)]
    if G != 1:
        acc *= G
        pot *= G
    return acc, pot, sum(c[0] for c in counts), sum(c[1] for c in counts)
