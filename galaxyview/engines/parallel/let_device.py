"""The LET export on the device (kernels/parallel_let.cu): let.export's walk, rows and
particles for every remote domain (described by boxes: its groups'), queued on the engine's
stream after the multipoles. The other ranks copy their part of the compact result device to
device (CUDA IPC, on one host), or it goes to pinned host memory in one copy on a side stream
(GPURank._fetch) for MPI.

All remote domains in one walk: one launch to start (a root a domain), then two per tree
level down to the tree's deepest (let_test: each frontier cell tested, a warp a cell, against
every box of its domain through a tree of their unions, box_tree; let_level: the opened
cells' children scanned by look-back and written as the next frontier, each domain's in the
tree's breadth-first order), the rows' places (let_layout: LET after LET), the particles per
cell and their scan (let_bodies) and the gather of the rows: about 35 launches in all,
whatever the number of domains. No host synchronisation inside: the frontier sizes stay on
the device. A frontier longer than its list (DeviceExport.list_share of the tree's cells) is
flagged by let_level; the list is doubled and the export must be queued again. The
output holds the LETs of all remote domains one after the other (rank order), so it is the
send buffer of the LET exchange as it is. When the output is too small (let_end flags it), it
is grown to what was needed and the export must be queued again.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from galaxyview.engines.gpu.constants import MAX_LEVEL
from galaxyview.engines.parallel.let import CELL_WIDTH, MARGIN, PARTICLE_WIDTH, valid_boxes
from galaxyview.engines.parallel.peers import PeerBuffers
from galaxyview.errors import EngineError

T = (256, 1, 1)
LC_OUT_C, LC_OUT_P, LC_OVERFLOW = 6, 7, 8
CTL_WORDS = 16
MIN_OUT = 1 << 16  # rows of the first output buffers
FAN = 8  # nodes of box_tree under one (LET_FAN in the kernel)
MAX_DEPTH = 9  # box_tree's levels above the boxes (8^9 boxes)
# the walk's frontier list (cell, tag, accepted, first child) and the rows' particles and
# their starts; as many entries as DeviceExport.list_share of the tree's cells
LIST_BUFFERS = ("let_list", "let_tag", "let_acc", "let_kid0", "let_bodies", "let_body0")


@dataclass(frozen=True)
class DeviceBoxes:
    """`count` boxes (lo, hi: 6 float32 each, none empty) in device memory: a rank's group
    boxes, another rank's opened through CUDA IPC (peers.py)."""

    ptr: int
    count: int

    def __len__(self) -> int:
        return self.count


class DeviceExport:
    """The device LET export of one GPU rank (its device buffers; its host copies in the
    rank's pinned buffers, GPURank._pinned). Its output, `cells` and `parts`, the other
    ranks read device to device on one host (PeerBuffers)."""

    def __init__(self, eng):
        self.eng = eng
        self.cap_cells = self.cap_parts = 0
        self._queued: list[int] = []  # the ranks whose boxes were queued, in order
        self.list_share = 1.0  # the frontier list's entries a cell of the tree (all LETs')
        self.cells = PeerBuffers("the LET cells", "let_out_cells")
        self.parts = PeerBuffers("the LET particles", "let_out_parts")

    def close(self) -> None:
        """Close the other ranks' outputs (within the engine's context)."""
        self.cells.close()
        self.parts.close()

    def ensure(self) -> None:
        """(in the context) Output buffers, at least the first ones."""
        self._ensure_out(max(self.cap_cells, MIN_OUT), max(self.cap_parts, MIN_OUT))

    def _blocks(self) -> int:
        return min(1024, 2 * self.eng._n_sm)

    def queue(self, boxes: list, skip: int, depth: int = MAX_LEVEL, stream=None,
              blocks: int | None = None) -> None:
        """Queue the export against the boxes of every rank r but `skip` (boxes[r]: (B, 6)
        lo, hi, e.g. its groups'; a rank without a box needs no LET), on `stream` (None: the
        engine's), into the output buffers: all of them in one walk of the tree. depth: the
        tree's deepest level (deepest_level), or MAX_LEVEL where it is not known. blocks: of
        each launch (None: two an SM; fewer beside the walk, which holds the rest)."""
        eng = self.eng
        b, k = eng.buf, eng.kernels
        p = b.ptr
        boxes = [valid_boxes(q) if r != skip and isinstance(q, np.ndarray) else q
                 for r, q in enumerate(boxes)]
        self._queued = [r for r in range(len(boxes)) if r != skip and len(boxes[r])]
        nq = len(self._queued)
        # (grown by a quarter: freeing a buffer would wait for the walk running beside)
        b.room("let_ctl", 4 * CTL_WORDS)
        b.room("let_counts", 8 * max(nq, 1))
        self.ensure()
        if not nq:
            return
        dtab = self._upload_boxes([boxes[r] for r in self._queued], stream, blocks)
        levels = min(max(int(depth), 0), MAX_LEVEL) + 1
        b.room("let_tiles", 8 * (levels + 1))  # look-back counters
        b.room("let_seg", 4 * levels * (nq + 1))
        b.room("let_lay", 4 * (nq + 1 + (levels + 1) * nq))
        cap = max(int(self.list_share * b.cell_cap), nq + 1)
        list_, tag, acc, kid0, bodies, body0 = (b.per_cell(n, 4 * max(1.0, self.list_share))
                                                for n in LIST_BUFFERS)
        b._alloc("let_desc", 8 * (cap // T[0] + 2), zero=True)
        ctl, tiles, seg, lay, desc = (p(n) for n in ("let_ctl", "let_tiles", "let_seg",
                                                      "let_lay", "let_desc"))
        grid = (blocks or self._blocks(), 1, 1)
        npos, _ = b.set_ptrs(eng._cur)
        margin = float(np.float32(MARGIN))
        eng._cuda.memset_d32_async(tiles, 0, 2 * (levels + 1), stream)
        k.launch("let_begin", (-(-nq // T[0]), 1, 1), T, ctl, list_, tag, nq, stream=stream)
        for lev in range(levels):
            k.launch("let_test", grid, T, lev, p("cell_mac"), list_, tag, ctl, p("let_boxes"),
                     dtab, margin, acc, stream=stream)
            k.launch("let_level", grid, T, lev, p("nchild"), p("child"), list_, tag, ctl, cap,
                     nq, acc, kid0, seg, desc, tiles + 8 * lev, eng.next_epoch(), stream=stream)
        k.launch("let_layout", (1, 1, 1), (1, 1, 1), seg, levels, nq, ctl, lay, stream=stream)
        k.launch("let_bodies", grid, T, ctl, list_, tag, acc, p("nchild"), p("count"),
                 eng.pp_leaf, lay, nq, bodies, stream=stream)
        k.launch("let_bodies_scan", grid, T, ctl, bodies, body0, desc, tiles + 8 * levels,
                 eng.next_epoch(), stream=stream)
        k.launch("let_rows", grid, T, ctl, list_, tag, acc, kid0, bodies, body0, lay, nq,
                 p("cell_mac"), p("cell_q0"), p("cell_q1"), p("nchild"), p("begin"), npos,
                 p("let_out_cells"), p("let_out_parts"), self.cap_cells, self.cap_parts,
                 stream=stream)
        k.launch("let_end", (-(-nq // T[0]), 1, 1), T, ctl, lay, body0, p("let_counts"), nq,
                 self.cap_cells, self.cap_parts, stream=stream)

    def _upload_boxes(self, per_rank: list, stream=None, blocks: int | None = None) -> int:
        """Queue the upload of the queued ranks' boxes (host arrays, or DeviceBoxes copied
        device to device) and the build of their box_tree (let_box_union, level on level from
        the boxes up), all in buffer 'let_boxes', whose last 5 ints a rank say where its
        boxes, nodes, level starts and counts lie (in floats from the buffer's start) and its
        depth; returns the device address of that table."""
        eng, b = self.eng, self.eng.buf
        levels = [tree_levels(len(q)) for q in per_rank]
        # one float32 buffer: per rank its boxes, nodes, then starts and counts (int32)
        sizes = [6 * len(q) + 6 * int(count[:-1].sum()) + len(start) + len(count)
                 for q, (start, count) in zip(per_rank, levels)]
        total = sum(sizes) + 5 * len(per_rank)
        host = self.eng._pinned("export_boxes", total, np.float32)
        b.room("let_boxes", 4 * total)
        base, at, where = b.ptr("let_boxes"), 0, []
        for q, (start, count) in zip(per_rank, levels):
            box_at, node_at = at, at + 6 * len(q)
            if isinstance(q, np.ndarray):
                host[at:at + q.size] = q.reshape(-1)
            at += 6 * len(q) + 6 * int(count[:-1].sum())
            host[at:at + len(start)] = start.view(np.float32)
            host[at + len(start):at + len(start) + len(count)] = count.view(np.float32)
            where.append((box_at, node_at, at, at + len(start), len(start)))
            at += len(start) + len(count)
        host[at:total] = np.array(where, np.int32).reshape(-1).view(np.float32)
        eng._cuda.memcpy_htod_async(base, host[:total], stream)
        for q, (box_at, *_) in zip(per_rank, where):  # after the upload, in stream order
            if isinstance(q, DeviceBoxes):
                eng._cuda.memcpy_dtod_async(base + 4 * box_at, q.ptr, 24 * q.count, stream)
        for (box_at, node_at, *_), (start, count) in zip(where, levels):
            box_at, node_at = base + 4 * box_at, base + 4 * node_at
            for lev in range(len(start) - 1, -1, -1):
                below = box_at if lev == len(start) - 1 else node_at + 24 * int(start[lev + 1])
                grid = eng._grid(int(count[lev]))
                eng.kernels.launch("let_box_union", (min(grid, blocks or grid), 1, 1), T,
                                   below, int(count[lev + 1]), node_at + 24 * int(start[lev]),
                                   int(count[lev]), stream=stream)
        return base + 4 * at

    def _ensure_out(self, cells: int, parts: int) -> None:
        b = self.eng.buf
        if cells > self.cap_cells:
            self.cap_cells = cells
            self.cells.grow(b, 4 * CELL_WIDTH * cells)
        if parts > self.cap_parts:
            self.cap_parts = parts
            self.parts.grow(b, 4 * PARTICLE_WIDTH * parts)

    def counts(self, stream) -> np.ndarray | None:
        """(size, 2) int64 cells and particles of the LET for every rank (after the queued
        export; waits for it on `stream`), or None when the output overflowed (it is grown:
        queue the export again)."""
        cuda, b = self.eng._cuda, self.eng.buf
        n = len(self._queued)
        ctl = self.eng._pinned("export_ctl", CTL_WORDS, np.int32)
        counts = self.eng._pinned("export_counts", 2 * max(n, 1), np.int32)
        cuda.memcpy_dtoh_async(ctl, b.ptr("let_ctl"), stream)
        if n:
            cuda.memcpy_dtoh_async(counts[:2 * n], b.ptr("let_counts"), stream)
        stream.synchronize()
        if n and ctl[LC_OVERFLOW] & 2:  # the frontier outgrew its list: the output's sizes
            self.list_share *= 2  # are not known yet
            return None
        if n and ctl[LC_OVERFLOW]:
            self._ensure_out(int(1.25 * ctl[LC_OUT_C]) + 1, int(1.25 * ctl[LC_OUT_P]) + 1)
            return None
        return counts[:2 * n].reshape(-1, 2).astype(np.int64)

    def copy(self, stream, totals) -> tuple[np.ndarray, np.ndarray]:
        """Queue the copy of the output (totals: cells, particles of all LETs) to pinned host
        memory on `stream`: (cells (C, CELL_WIDTH), particles (P, 4)) float32, valid once the
        stream is synchronised."""
        cuda, b = self.eng._cuda, self.eng.buf
        c, p = int(totals[0]), int(totals[1])
        cells = self.eng._pinned("export_cells", c * CELL_WIDTH, np.float32).reshape(c, CELL_WIDTH)
        parts = self.eng._pinned("export_parts", p * PARTICLE_WIDTH,
                                 np.float32).reshape(p, PARTICLE_WIDTH)
        if c:
            cuda.memcpy_dtoh_async(cells, b.ptr("let_out_cells"), stream)
        if p:
            cuda.memcpy_dtoh_async(parts, b.ptr("let_out_parts"), stream)
        return cells, parts

    def per_rank(self, counts: np.ndarray, size: int) -> np.ndarray:
        """(size, 2) rows of every rank's LET (0 for the ranks not queued)."""
        out = np.zeros((size, 2), np.int64)
        out[self._queued] = counts
        return out


def pinned(cuda, count: int, dtype) -> np.ndarray:
    """Page-locked host memory for `count` elements and half as many more: allocating it
    synchronises the device (the step would wait for the walk), so a buffer that grows with
    the LETs (a merger's, step after step) is made anew seldom."""
    return cuda.pagelocked_empty(int(1.5 * max(count, 1)) + 4096, dtype)


def scan(k, vals, n_ptr, out, total_ptr, sums, blocks: int) -> None:
    """Queue the exclusive scan of the int32 vals[0, *n_ptr) into out, the total into
    *total_ptr (device pointers; sums: `blocks` <= 1024 int32 of scratch)."""
    k.launch("let_scan_reduce", (blocks, 1, 1), T, vals, n_ptr, sums)
    k.launch("let_scan_top", (1, 1, 1), (1024, 1, 1), sums, blocks, total_ptr)
    k.launch("let_scan_apply", (blocks, 1, 1), T, vals, n_ptr, sums, out)


def deepest_level(lb: np.ndarray) -> int:
    """The deepest level holding cells, from the build's level starts lb (lb[l] the first
    cell of level l, lb[MAX_LEVEL + 2] the number of cells); MAX_LEVEL where lb makes no
    sense (a build that overflowed)."""
    lb = np.asarray(lb, np.int64)[:MAX_LEVEL + 2]
    counts = np.diff(lb)
    if len(counts) < MAX_LEVEL + 1 or (counts < 0).any() or counts[0] != 1:
        return MAX_LEVEL
    return int(np.flatnonzero(counts)[-1])


def tree_levels(n_boxes: int) -> tuple[np.ndarray, np.ndarray]:
    """box_tree's shape over n_boxes >= 1 boxes: (level l's first node start[l] (depth,),
    the levels' node counts from the root's down, the boxes last (depth + 1,)), int32."""
    sizes = [n_boxes]
    while sizes[-1] > 1:
        sizes.append(-(-sizes[-1] // FAN))
    if len(sizes) - 1 > MAX_DEPTH:
        raise EngineError(f"{n_boxes:,} boxes describe one domain; the LET export takes at "
                          f"most {FAN ** MAX_DEPTH:,}: use more processes")
    count = np.array(sizes[:0:-1] + [n_boxes], np.int32)
    return np.r_[0, np.cumsum(count[:-1])][:-1].astype(np.int32), count


def box_tree(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The unions of consecutive boxes (B, 6), FAN under each, level on level up to one
    (let_box_union builds the same on the device): (nodes (N, 6) float32 from the root's
    level down, and tree_levels' start and count). Boxes along a curve make compact unions,
    so let_test skips most of them a node at a time."""
    boxes = np.ascontiguousarray(boxes, np.float32).reshape(-1, 6)
    start, count = tree_levels(len(boxes))
    nodes = np.zeros((int(count[:-1].sum()), 6), np.float32)
    below = boxes
    for lev in range(len(start) - 1, -1, -1):
        first = np.arange(0, len(below), FAN)
        below = nodes[start[lev]:start[lev] + count[lev]] = np.c_[
            np.minimum.reduceat(below[:, :3], first), np.maximum.reduceat(below[:, 3:], first)]
    return nodes, start, count
