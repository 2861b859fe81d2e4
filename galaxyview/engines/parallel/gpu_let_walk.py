"""The walk of a GPU rank's imported LETs (GPURank's). They lie as sent (the particles behind
a copy of the local sorted positions), and `let_forest` lays them out as one forest under an
always-opened root (as let.device_forest does; behind a copy of the local tree's cells when
the two are walked as one). The forest is walked after the local walk (on the export
stream, behind the peer copies) into a second buffer, which `let_add` adds; or
(GALAXYVIEW_LET_WALK=one) the local walk waits for the LETs: some groups walk the local tree
while the LETs are exchanged (the head start), then the others walk the tree and the forest
together (walk_roots), and the head start's groups the forest alone (let_add_groups).
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.gpu.constants import (FLAG_STACK, ST_FLAGS, ST_LOCAL_PC,
                                              ST_LOCAL_PP, ST_PC, ST_PP, ST_WALK_NEXT)
from galaxyview.engines.gpu.phases import walk_arguments
from galaxyview.engines.parallel import let
from galaxyview.engines.parallel.launch import env_choice
from galaxyview.errors import EngineError

# GALAXYVIEW_LET_WALK=one: the share of the groups that walk the local tree before the LETs
# are in (the head start): 1/8 at first, then sized each evaluation to end HEAD_MARGIN_MS
# after the LETs are copied in, within [1/64, 1/2]
HEAD_SHARE, HEAD_SHARES, HEAD_MARGIN_MS = 1 / 8, (1 / 64, 1 / 2), 0.3


def let_walk() -> str:
    """How the imported LETs are walked (GALAXYVIEW_LET_WALK): "apart" (the default: the local
    tree walked while the LETs are exchanged, then their forest in a second walk) or "one"
    (the local tree and the forest walked together once the LETs are there, after a head
    start of some groups on the local tree alone while they are exchanged; docs/parallel.md
    has both measured)."""
    return env_choice("GALAXYVIEW_LET_WALK", ("apart", "one"))


class LETWalkMixin:
    """Before GPUEngine in GPURank's bases (GPURank holds the LET events, `_let_ev`, and the
    streams)."""

    def _walk_later(self, ev) -> bool:
        """(run_force, after _before_walk) With GALAXYVIEW_LET_WALK=one, on a first attempt
        whose export is queued: the first _head_share of the groups walk the local tree now
        (the head start: the device works while the LETs are exchanged), the rest wait for
        _queue_walk, which walks them through the tree and the LETs together."""
        self._walk_left = (self.let_walk == "one" and ev is not None and self._in_span
                           and not self._alone())
        self._head = int(self._groups_built * self._head_share) if self._walk_left else 0
        if self._head:
            pos, _ = self.buf.set_ptrs(self._cur)
            self._let_ev[10].record()
            self._walk_roots(pos, "cell_", "acc", 0, -1, 0, self._head)
            self._let_ev[11].record()
        return self._walk_left

    def _walk_roots(self, pos: int, cells: str, out: str, root1: int, root2: int, g_lo: int,
                    g_hi: int, stream=None) -> None:
        """(in the context) walk_roots of the groups [g_lo, g_hi) from root1 and root2 of
        the cells cells + 'mac', ... (the local tree's 'cell_', the forest's 'let_') into
        buffer `out`, after resetting the group counter."""
        b = self.buf
        self._cuda.memset_d32_async(b.ptr("status") + 8 * ST_WALK_NEXT, 0, 2, stream)
        self.kernels.launch("walk_roots", (b.walk_grid, 1, 1), (b.walk_threads, 1, 1),
                            *walk_arguments(self, pos, cells, out), root1, root2, g_lo, g_hi,
                            stream=stream)

    def _queue_let_walk_beside(self, lets: list) -> None:
        """(in the context) The LET walk on the export stream, behind the joined blocks, the
        local walk (the engine's event 5) and the peer copies; the local walks'
        interactions copied aside first (status words ST_LOCAL_PP, ST_LOCAL_PC)."""
        es = self._export_stream
        es.wait_for_event(self._events[5])
        if self._peer_path == "device" and lets:
            es.wait_for_event(self._let_ev[8])
        status = self.buf.ptr("status")
        self._cuda.memcpy_dtod_async(status + 8 * ST_LOCAL_PP, status + 8 * ST_PP, 16, es)
        self._queue_walk(lets, es)

    def _joined_end(self) -> EngineError | None:
        """Wait for the blocks that joined the local walk; its interactions and stack flag
        read again (the first read may have come before they ended)."""
        try:
            with self.activate():
                self._wait(self._let_ev[12])
                self._read_status()
            self._check_status()  # (the tree's arrays were checked at the first read)
        except Exception as exc:  # (agreed on, as any error of the evaluation)
            return exc if isinstance(exc, EngineError) else EngineError(
                f"the tree walk failed on the device: {exc}")
        self.stats.pp = int(self._host_status[ST_PP])
        self.stats.pc = int(self._host_status[ST_PC])
        return None

    def _walk_forest(self, lets: list) -> dict:
        """The imported LETs walked by the local groups on the device (_queue_walk, unless
        queued already), waited for; the interactions counted. Returns the ms of its parts on
        the device (events): upload, forest, kernel (the walks, with the head start, and
        let_add), peer; and the LET walk's p-p and p-c interactions a particle (of walks
        apart)."""
        ev = self._let_ev
        pp0, pc0 = int(self._host_status[ST_PP]), int(self._host_status[ST_PC])  # local walk's
        one = self._walk_left
        with self.activate():
            if self._walk_queued is None and self._joined:
                self._queue_let_walk_beside(lets)
            elif self._walk_queued is None:
                self._queue_walk(lets)
            self._wait(ev[9])
            self._read_status()
        if self._joined:  # the local walks' counts, copied aside before the LET walk
            pp0, pc0 = int(self._host_status[ST_LOCAL_PP]), int(self._host_status[ST_LOCAL_PC])
        if int(self._host_status[ST_FLAGS]) & FLAG_STACK:
            raise EngineError(f"the tree walk (local or LETs) ran out of stack at theta = "
                              f"{self.params.theta:g}: use a larger theta")
        self.stats.pp = int(self._host_status[ST_PP])  # local and LET interactions
        self.stats.pc = int(self._host_status[ST_PC])
        pp, pc = (0, 0) if one else (self.stats.pp - pp0, self.stats.pc - pc0)
        n = max(self._n, 1)
        head = ev[11].time_since(ev[10]) if self._head else 0.0  # (beside the exchange)
        if head > 0 and lets and self._walk_queued == "side":  # (the LETs' arrival measured)
            self._size_head(head, ev[4].time_since(ev[11]))
        return {"upload": ev[4].time_since(ev[3]), "forest": ev[5].time_since(ev[4]),
                "kernel": head + ev[9].time_since(ev[5]), "pp": pp / n, "pc": pc / n,
                "peer": ev[8].time_since(ev[7]) if self._peer_path == "device" and lets
                else 0.0}

    def _size_head(self, head_ms: float, late_ms: float) -> None:
        """The next head start's share of the groups, from this one's: it took head_ms and
        the LETs were in late_ms after its end (negative: before); aim for the head start to
        end HEAD_MARGIN_MS after them, changing the share at most twofold a time."""
        factor = min(max((head_ms + late_ms + HEAD_MARGIN_MS) / head_ms, 0.5), 2.0)
        lo, hi = HEAD_SHARES
        self._head_share = min(max(self._head_share * factor, lo), hi)

    def _queue_walk(self, lets: list, stream=None) -> None:
        """(in the context) Queue the walk of the imported LETs (events 3-5, 9): into a
        second buffer, added to the local walk's forces (buffer 'acc', sorted order); or
        where the local walk was left (_walk_later), the groups past the head start through
        the local tree and the LETs in one walk (walk_roots) straight into 'acc', and the
        head start's groups through the LETs alone (added); without LETs the local walk of
        the groups left. On `stream` (the side stream, behind the peer copies) or the null
        stream."""
        b, n, ev, k = self.buf, self._n, self._let_ev, self.kernels
        p = b.ptr
        one, head = self._walk_left, self._head
        base = self._cells_built if one else 0  # this build's, read in _fetch
        if lets:
            self._upload_forest(lets, base, stream)
        else:
            ev[3].record(stream)
            ev[4].record(stream)
        if head and stream is not None:
            stream.wait_for_event(ev[11])  # the head start (null stream) is done
        ev[5].record(stream)
        if not lets:  # no LET came: the local walk of the groups left
            local, _ = b.set_ptrs(self._cur)
            self._walk_roots(local, "cell_", "acc", 0, -1, head, 2**31 - 1, stream)
        elif one:
            self._walk_roots(p("let_pos"), "let_", "acc", 0, base, head, 2**31 - 1, stream)
            if head:
                self._walk_roots(p("let_pos"), "let_", "let_acc", base, -1, 0, head, stream)
                k.launch("let_add_groups", (self._grid(), 1, 1), (256, 1, 1), p("acc"),
                         p("let_acc"), p("group_begin"), p("group_count"), head,
                         stream=stream)
        else:
            self._walk_roots(p("let_pos"), "let_", "let_acc", 0, -1, 0, 2**31 - 1, stream)
            k.launch("let_add", (self._grid(), 1, 1), (256, 1, 1), p("acc"), p("let_acc"), n,
                     stream=stream)
        ev[9].record(stream)
        self._walk_queued = "null" if stream is None else "side"

    def _import_buffers(self, cells: int, parts: int, base: int = 0) -> None:
        """(in the context) Room for the forest of `cells` LET cells behind `base` others
        and `parts` particles behind the local ones."""
        b, n = self.buf, self._n
        for name, width in (("let_mac", 16), ("let_q0", 16), ("let_q1", 16), ("let_link", 8)):
            b.room(name, width * (base + 1 + cells))
        b.room("let_rows", 4 * let.CELL_WIDTH * max(cells, 1))
        b.room("let_pos", 16 * (n + parts))
        b.room("let_acc", 16 * n)

    def _upload_forest(self, lets: list, base: int = 0, stream=None) -> None:
        """Queue the forest of the imported LETs (`lets`: their (cells, particles) per rank;
        the rows in self._recv, pinned, LET after LET, or on the device path already copied
        into 'let_rows' and behind the local particles in 'let_pos') on the device: the rows
        go up as they are, the particles behind a copy of the local sorted positions
        ('let_pos'), and let_forest lays the cells out as let.device_forest does ('let_mac',
        'let_q0', 'let_q1', 'let_link'), behind a copy of the local tree's first `base` cells
        (walk_roots walks both). Events 3, 4 of _let_ev around the upload; on `stream`
        (the side stream: behind the peer copies) or the null stream."""
        cuda, b, n = self._cuda, self.buf, self._n
        p = b.ptr
        sizes = np.array(lets, np.int64).reshape(-1, 2)
        starts = np.r_[np.cumsum(sizes[:, 0]) - sizes[:, 0],
                       np.cumsum(sizes[:, 1]) - sizes[:, 1]].astype(np.int32)
        n_cells, n_parts = (int(v) for v in sizes.sum(axis=0))
        self._import_buffers(n_cells, n_parts, base)
        b._alloc("let_starts", starts.nbytes)
        self._let_ev[3].record(stream)
        if self._peer_path == "device":  # the peer copies (side stream), long done by now:
            if stream is None:
                self._let_ev[8].synchronize()  # the host waits, rather than the null stream
        else:
            if n_cells:
                cuda.memcpy_htod_async(p("let_rows"), self._recv["cells"][:n_cells], stream)
            if n_parts:
                cuda.memcpy_htod_async(p("let_pos") + 16 * n, self._recv["parts"][:n_parts],
                                       stream)
        cuda.memcpy_htod_async(p("let_starts"), self._pinned_copy("starts", starts), stream)
        pos, _ = b.set_ptrs(self._cur)  # the local particles in the tree's order
        cuda.memcpy_dtod_async(p("let_pos"), pos, 16 * n, stream)
        for name, width in (("mac", 16), ("q0", 16), ("q1", 16), ("link", 8)):
            if base:
                cuda.memcpy_dtod_async(p("let_" + name), p("cell_" + name), width * base,
                                       stream)
        self._let_ev[4].record(stream)
        self.kernels.launch("let_forest", (self._grid(max(n_cells, 1)), 1, 1), (256, 1, 1),
                            p("let_rows"), n_cells, p("let_starts"), len(sizes), n, base,
                            p("let_mac"), p("let_q0"), p("let_q1"), p("let_link"),
                            stream=stream)
