"""A GPU rank's force evaluation (GPURank's, over its gpu_boxes, gpu_exchange and gpu_let_walk
parts): the GPU engine's own phases are queued (keys, sort, tree, groups, multipoles, local
walk); the local walk starts as soon as the tree is built, with a share of its blocks held
back, while the domains' boxes (their groups') are exchanged (on one host only their counts
through MPI: the boxes are read device to device) and the LET export against every other
domain is queued (let_device.py) on the export stream, beside the walk, on the blocks held
back; then these join the walk (GALAXYVIEW_LET_EXPORT=before: the export between the
multipoles and the walk, the engine's _before_walk, as with GALAXYVIEW_LET_WALK=one). While
the device walks the local tree (or its head start), the LETs are exchanged (gpu_exchange.py)
and then walked (gpu_let_walk.py). One agreement on errors follows the walk. When the tree
outgrew its arrays (rebuilt) or the export its output, the LETs follow the walk instead of
running beside it.
"""
from __future__ import annotations

import threading
from contextlib import suppress
from time import perf_counter

from galaxyview.engines.gpu.constants import MAX_LEVEL, STACK_CAP
from galaxyview.engines.gpu.phases import walk_arguments
from galaxyview.engines.parallel import let
from galaxyview.engines.parallel.launch import env_choice
from galaxyview.errors import EngineError

# the export beside the local walk (GALAXYVIEW_LET_EXPORT=beside): the walk's launch holds
# back a share of its blocks (at least HOLD_BACK_MIN) for the export's launches, which take
# twice as many; then the blocks held back join the walk. 1/16 at first, then sized each
# evaluation for the export to end EXPORT_AIM of the way through the walk, within the shares
HOLD_BACK_SHARE, HOLD_BACK_SHARES, HOLD_BACK_MIN, EXPORT_AIM = 1 / 16, (1 / 64, 1 / 4), 4, 0.5


def let_export() -> str:
    """When the LET export runs (GALAXYVIEW_LET_EXPORT): "beside" the local walk (the default,
    with the walks apart: the walk starts as soon as the tree is built, while the boxes are
    shared and the export is queued; a few of its blocks wait for the export and then join)
    or "before" it (the walk queued behind the export, the device idle while the host shares
    the boxes and queues the export). GALAXYVIEW_LET_WALK=one exports before the walk."""
    return env_choice("GALAXYVIEW_LET_EXPORT", ("beside", "before"))


class ForcesMixin:
    """Before the other mixins and GPUEngine in GPURank's bases: its hooks into the engine's
    force evaluation (_before_walk, _walk_launch_blocks, _force, _evaluate)."""

    def _before_walk(self, ev) -> None:
        """(run_force, after the multipoles; first attempts only) The domain's boxes: the
        boxes of the walk's groups (let_group_boxes, copied on the side stream), or where the
        build overflowed (its groups are not valid) the domain's bounding box, from the
        bounding-box kernel's partial results of the key sort; exchanged; then the LET
        export queued before the walk."""
        if ev is None or self._alone() or self._boxes is not None:
            return
        t0 = perf_counter()
        self._let_ev[0].record()  # the multipoles end here; the LET phase starts
        if self.let_export == "beside" and self.let_walk == "apart":
            self._queue_boxes(ev)  # read after the walk is queued (_export_beside)
            self._beside, self._held = True, self._hold_back()
            return
        mine = self._domain_boxes(ev)
        t1 = perf_counter()
        self._boxes = self._share_boxes(mine)
        t2 = perf_counter()
        self._queue_export(self.comm.rank)
        self._in_span = True  # events 0..2 recorded; run_force records its 4 next
        self.parallel_ms.update(let_box_fetch=1e3 * (t1 - t0), let_box_share=1e3 * (t2 - t1),
                                let_queue=1e3 * (perf_counter() - t2))

    def _walk_launch_blocks(self) -> int:
        return self.buf.walk_grid - (self._held if self._beside else 0)

    def _hold_back(self) -> int:
        """Blocks of the local walk that wait for the export beside it."""
        grid = self.buf.walk_grid
        return min(max(HOLD_BACK_MIN, round(grid * self._hold_share)), grid // 2)

    def _size_hold_back(self, export_ms: float, walk_ms: float) -> None:
        """The next evaluation's share of the walk's blocks held back, from this one's: the
        export (on about as many blocks) took export_ms beside a walk of walk_ms; aim for it
        to take EXPORT_AIM of the walk, changing the share at most twofold a time."""
        if export_ms <= 0 or walk_ms <= 0:
            return
        factor = min(max(export_ms / (EXPORT_AIM * walk_ms), 0.5), 2.0)
        lo, hi = HOLD_BACK_SHARES
        self._hold_share = min(max(self._hold_share * factor, lo), hi)

    def _export_beside(self) -> None:
        """(in _force, the local walk queued with some blocks held back) The domain's boxes
        read (their copies followed the group boxes, not the walk), shared, and the export
        queued on the export stream, beside the walk, on the free blocks; behind it the
        blocks held back walk too (event 12), taking groups from the same counter, with
        their own stacks."""
        t0 = perf_counter()
        mine = self._read_boxes()
        t1 = perf_counter()
        self._boxes = self._share_boxes(mine)
        t2 = perf_counter()
        es, b, held = self._export_stream, self.buf, self._held
        es.wait_for_event(self._let_ev[6])
        self._queue_export(self.comm.rank, es, 2 * held)
        p = b.ptr
        npos, _ = b.set_ptrs(self._cur)
        stacks = p("stacks") + 4 * STACK_CAP * (b.walk_threads // 32) * (b.walk_grid - held)
        self.kernels.launch("walk", (held, 1, 1), (b.walk_threads, 1, 1),
                            *walk_arguments(self, npos, stacks=stacks), stream=es)
        self._let_ev[12].record(es)
        self._in_span = self._joined = True
        self.parallel_ms.update(let_box_fetch=1e3 * (t1 - t0), let_box_share=1e3 * (t2 - t1),
                                let_queue=1e3 * (perf_counter() - t2))

    def _force(self, ev, active=None, refit=False) -> None:
        """The local phases with the LET export before the walk (queued, not waited for);
        then, on a first attempt and while the device walks the local tree, the LETs are
        exchanged: device to device (the sizes through MPI), or copied to pinned host memory
        on a side stream and exchanged by a host thread.
        (Forces of all particles only: ParallelEngine runs shared steps.) Beside the walk
        (GALAXYVIEW_LET_EXPORT=beside) the boxes are shared and the export queued only now,
        with the walk already running."""
        self._beside = False
        super()._force(ev, active, refit)
        if self._beside:
            self._export_beside()
        if (ev is None or self._alone() or self._thread is not None or self._lets is not None
                or self._boxes is None):
            return
        t0 = perf_counter()
        peers = self.peer_path() == "device"
        staged = self._fetch(copy=not peers)
        if staged is None:  # the tree or the output outgrew its arrays: LETs after the walk
            if self._joined:  # (the export and the joined walk end before anything grows;
                self._let_ev[12].synchronize()  # the rebuilt tree's LETs go the plain way)
                self._joined = False
            return
        self._fetch_ms = 1e3 * (perf_counter() - t0)
        if peers:  # only the sizes through MPI (the walk runs meanwhile); copies queued
            self._lets = self._exchange_peers(staged)
            if self._lets and self._import_error is None and (self._walk_left or self._joined):
                with self.activate():  # the walk follows the copies on a side stream
                    if self._joined:
                        self._queue_let_walk_beside(self._lets)
                    else:
                        self._queue_walk(self._lets, self._side_stream)
            return
        self._thread = threading.Thread(target=self._exchange_in_thread, args=(staged,),
                                        name="galaxyview-let", daemon=True)
        self._thread.start()

    def _evaluate(self, active=None) -> None:
        self.evaluations += 1
        if active is not None:
            raise EngineError("the parallel engine evaluates the forces of all particles; "
                              "an integrator with active subsets runs on one process")
        if self._alone():
            return super()._evaluate()
        self._thread, self._lets, self._fetch_ms, self._boxes = None, None, 0.0, None
        self._in_span, self._import_error, self._walk_queued = False, None, None
        self._joined = False
        self._depth = MAX_LEVEL  # (until this evaluation's tree says)
        error = None
        try:
            super()._evaluate()  # the export before the walk, the exchange beside it
        except EngineError as exc:
            error = exc
        t = self.stats.timings_ms
        # the boxes and the export, queued between the multipoles and the walk (events 0 and
        # the engine's 4): GPU time inside the multipoles' span, moved to let_build
        before = self._events[4].time_since(self._let_ev[0]) if self._in_span else 0.0
        t["multipoles"] = max(0.0, t.get("multipoles", 0.0) - before)
        beside = self._joined and error is None and (self._lets is not None or
                                                      self._thread is not None)
        export_late = 0.0
        if beside:  # the export beside the walk (the tree not rebuilt): the blocks held back
            # for it sized anew; its time past the walk's end is LET build on the step's path
            ev, walk = self._let_ev, self._events[5].time_since(self._events[4])
            self._size_hold_back(ev[2].time_since(ev[1]), walk)
            export_late = max(0.0, ev[2].time_since(self._events[5]))
            before += export_late
        fetch_ms = self._fetch_ms  # beside the local walk (not on the step's path)
        t0 = perf_counter()
        peers = self.peer_path() == "device"
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            lets = self._lets
            if isinstance(lets, BaseException):
                raise lets
            after = 0.0
        elif self._lets is not None:  # exchanged device to device beside the walk
            lets, after = self._lets, 0.0
        else:  # a rebuilt tree, or a failed evaluation: the export follows the walk
            staged = None
            try:
                staged = self._export_after_walk(error, copy=not peers)
            except EngineError as exc:
                error = error or exc
            after = self._fetch_ms if staged is not None else 0.0
            lets = self._exchange_peers(staged) if peers else self._exchange(staged)
        t1 = perf_counter()
        error = error or self._import_error  # no room for the LETs on this device
        walk_ms = {}  # the LET walk starts without waiting for the other ranks' local walks
        try:
            if error is None and (lets or self._walk_left):
                walk_ms = self._walk_forest(lets or [])
        except EngineError as exc:
            error = exc
        if self._walk_queued is not None and not walk_ms:  # failed: the queued walk ends first
            with self.activate(), suppress(Exception):  # (its error is the one agreed on)
                self._let_ev[9].synchronize()
        elif self._joined and not walk_ms:  # no LET walk: the joined blocks' end, their counts
            ended = self._joined_end()
            error = error or ended
        # beside, device to device: the wait for the LET sizes' allgather past the local
        # walk's end (event 7, the peer copies' start, is queued on the idle side stream once
        # the allgather is done), beyond the export's own lateness: LET communication
        comm_late = 0.0
        if beside and walk_ms and self._peer_path == "device" and lets:
            late = self._let_ev[7].time_since(self._events[5])
            comm_late = max(0.0, late - export_late)
        self.agree(error, "the force evaluation (the local tree or the LET walk)")
        got_c, got_p = sum(c for c, _ in lets or ()), sum(q for _, q in lets or ())
        self.parallel_ms.update(
            local_walk=t.get("walk", 0.0), let_build=before + after,
            let_comm=1e3 * (t1 - t0) - after + comm_late, let_walk=1e3 * (perf_counter() - t1),
            let_export=self._let_ev[2].time_since(self._let_ev[1]) if self._in_span else 0.0,
            let_fetch=fetch_ms if after == 0.0 else 0.0,
            let_forest=walk_ms.get("forest", 0.0), let_upload=walk_ms.get("upload", 0.0),
            let_walk_gpu=walk_ms.get("kernel", 0.0), let_peer_copy=walk_ms.get("peer", 0.0),
            let_interactions=walk_ms.get("pp", 0.0) + walk_ms.get("pc", 0.0),
            let_pp=walk_ms.get("pp", 0.0), let_pc=walk_ms.get("pc", 0.0),
            let_head_share=self._head / max(self._groups_built, 1),
            let_hold_back=self._held / self.buf.walk_grid if self._joined else 0.0,
            let_cells_in=float(got_c), let_particles_in=float(got_p),
            let_sent_mib=self._sent_bytes / 2**20,
            let_boxes_in=float(sum(len(q) for q in self._boxes or ()) - len(self._own_boxes())),
            let_recv_mib=(4 * let.CELL_WIDTH * got_c + 4 * let.PARTICLE_WIDTH * got_p) / 2**20)
        total = self.stats.pp + self.stats.pc
        self.cost = total / max(self._n, 1)
        self.parallel_ms["interactions"] = float(total)
