"""One rank's share on a GPU: the GPU engine on the particles of its domain, plus the LETs.

Each force evaluation: the GPU engine's own phases are queued (keys, sort, tree, groups,
multipoles, local walk); between the multipoles and the walk (the engine's _before_walk) the
domain boxes, from the key sort's bounding box, are exchanged and the LET export against
every other domain is queued on the device (let_device.py); its compact output is copied to
pinned host memory on a side stream while the device walks the local tree, and a host thread
exchanges the LETs over MPI (through host memory: the MPI need not be CUDA-aware). The
imported LETs, one forest under an always-opened root (let.device_forest), go to the device
behind a copy of the local sorted positions; the engine's own walk kernel walks them with the
local groups into a second buffer, which `let_add` adds to the local forces. When the tree
outgrew its arrays (rebuilt) or the export its output, the LETs follow the walk instead of
running beside it. The
decomposition (every particle through the host) runs every REBALANCE_EVERY steps
(GALAXYVIEW_REBALANCE_EVERY); in between particles stay on their GPU, and the LETs, built
from the current domain boxes, stay exact.
"""
from __future__ import annotations

import os
import threading
from time import perf_counter

import numpy as np

from galaxyview.cuda.compile import read_kernel
from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.gpu.constants import (FLAG_CELLS, FLAG_GROUPS, FLAG_STACK, ST_FLAGS,
                                              ST_PC, ST_PP, ST_WALK_NEXT)
from galaxyview.engines.gpu.engine import GPUEngine
from galaxyview.engines.parallel import let, let_device
from galaxyview.engines.parallel.rank import (ACC, COMPONENT, GALAXY, MASS, POS, POT, RADIUS,
                                              VEL, RankMixin, pack)
from galaxyview.errors import EngineError

REBALANCE_EVERY = 8  # steps between decompositions on the GPU (a host round trip)

LET_ADD = r"""
extern "C" __global__ void let_add(float4* __restrict__ acc, const float4* __restrict__ extra,
                                   int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float4 a = acc[i], b = extra[i];
        acc[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
}
"""


def rebalance_every() -> int:
    text = os.environ.get("GALAXYVIEW_REBALANCE_EVERY", str(REBALANCE_EVERY))
    if not text.isdigit() or int(text) < 1:
        raise EngineError(f"GALAXYVIEW_REBALANCE_EVERY={text!r}: give a whole number >= 1")
    return int(text)


def host_tree(cells: dict, n_leaf: int) -> Tree:
    """The device tree's cells (in gpu/inspect.download_tree's terms) as a Tree for
    let.export: what the export reads (particles, links, multipoles), the rest left empty."""
    n, n_cells = len(cells["mass"]), len(cells["cell_mass"])
    return Tree(keys=np.zeros(n, np.uint64), order=np.zeros(0, np.int64), pos=cells["pos"],
                mass=cells["mass"], lo=np.zeros(3, np.float32), L=np.float32(1),
                scale=np.float32(1), n_leaf=n_leaf, level=np.zeros(n_cells, np.int64),
                body_begin=cells["body_begin"], body_count=cells["body_count"],
                child_begin=cells["child_begin"], child_count=cells["child_count"],
                parent=np.zeros(n_cells, np.int64), level_begin=np.array([0, n_cells]),
                cell_mass=cells["cell_mass"], com=cells["com"], quad=cells["quad"])


class GPURank(RankMixin, GPUEngine):
    extra_kernels = (("parallel LET", LET_ADD),
                     ("parallel_let.cu", read_kernel("parallel_let.cu")))
    row_dtype = np.float32  # the device holds float32: half the bytes through the host

    def __init__(self, params=None, gravity=None, device: int = 0):
        super().__init__(params, gravity, device)
        self.every = rebalance_every()
        self._since = 0
        self._thread, self._lets, self._fetch_ms, self._boxes = None, None, 0.0, None
        self._staging: dict = {}  # pinned host buffers
        with self.activate():
            self._side_stream = self._cuda.Stream(flags=1)  # CU_STREAM_NON_BLOCKING
            self._let_ev = (self._cuda.Event(), self._cuda.Event())  # around the export
            self._export = let_device.DeviceExport(self)

    # -- the domain ------------------------------------------------------------------------
    def _load_rows(self, rows: np.ndarray, local) -> None:
        self.load(local)  # float32 on the device: float64 positions are rounded once
        self._since = 0

    def local_view(self, exact: bool) -> tuple:
        st = self.state()
        part = (self.ids, st.pos, st.vel, st.mass, st.component, st.galaxy, st.radius)
        return part + (self.accelerations() if exact else ())

    def step(self, n: int = 1) -> None:
        for _ in range(self._step_count(n)):
            self.parallel_ms.update(decompose=0.0, exchange=0.0)  # this step's, if any
            if self._since >= self.every:
                self._rebalance()
            super().step(1)
            self._since += 1
            t, ms = self.stats.timings_ms, self.parallel_ms  # the LET phases are not integration
            t["integrate"] -= ms["let_build"] + ms["let_comm"] + ms["let_walk"]

    def _rebalance(self) -> None:
        """New domains: every particle through the host, exchanged, uploaded (its forces
        with it: no evaluation)."""
        st = self.state()
        acc, pot = self.accelerations()
        rows, self.ids = self._redistribute(
            pack(st.pos, st.vel, acc, pot, st.mass, st.radius, st.component, st.galaxy,
                 self.row_dtype), self.ids)
        n = len(rows)
        pos4 = np.ascontiguousarray(np.c_[rows[:, POS], rows[:, MASS]], np.float32)
        vel4 = np.ascontiguousarray(np.c_[rows[:, VEL], rows[:, COMPONENT]], np.float32)
        acc4 = np.ascontiguousarray(np.c_[rows[:, ACC], rows[:, POT]], np.float32)
        self._component = rows[:, COMPONENT].astype(np.uint8)
        self._galaxy = rows[:, GALAXY].astype(np.int16)
        self._galaxy_on_device = False
        self._radius = rows[:, RADIUS].astype(np.float32)
        self._free_com()
        cuda = self._cuda
        with self.activate():
            self.buf.ensure(n, self._n_sm, self._walk_blocks, self._walk_threads)
            self._n, self._cur = n, 0
            pos, vel = self.buf.set_ptrs(0)
            cuda.memcpy_htod(pos, pos4)
            cuda.memcpy_htod(vel, vel4)
            cuda.memcpy_htod(self.buf.ptr("id0"), np.arange(n, dtype=np.uint32))
            cuda.memcpy_htod(self.buf.ptr("acc"), acc4)
        self._have_tree = self._tree_fresh = False  # acc4 stays valid: uploaded with them
        self._since = 0

    # -- forces ------------------------------------------------------------------------------
    def _before_walk(self, ev) -> None:
        """(run_force, after the multipoles; first attempts only) The domain boxes, from the
        bounding-box kernel's partial results of the key sort (copied on the side stream
        while the tree is built), exchanged; then the LET export queued before the walk."""
        if ev is None or self._alone() or self._boxes is not None:
            return
        side = self._side_stream
        part = self._pinned("bbox", 6 * 4 * self._n_sm, np.float32)
        side.wait_for_event(ev[2])
        self._cuda.memcpy_dtoh_async(part, self.buf.ptr("bbox"), side)
        side.synchronize()
        part = part.reshape(-1, 6)
        box = np.r_[part[:, :3].min(axis=0), part[:, 3:].max(axis=0)]
        self._boxes = self.comm.allgather(box, "the domain boxes").astype(np.float32)
        self._queue_export(self.comm.rank)

    def _alone(self) -> bool:
        """No other rank (one process, or not attached: the engine on its own)."""
        return self.comm is None or self.comm.size == 1

    def _queue_export(self, skip: int) -> None:
        """The export against every box of self._boxes but boxes[skip], between two events."""
        self._let_ev[0].record()
        self._export.queue(self._boxes, skip)
        self._let_ev[1].record()

    def _force(self, ev, active=None, refit=False) -> None:
        """The local phases with the LET export before the walk (queued, not waited for);
        then, on a first attempt, the compact LETs are copied to pinned host memory on a side
        stream while the device walks the local tree, and a host thread exchanges them.
        (Forces of all particles only: ParallelEngine runs shared steps.)"""
        super()._force(ev, active, refit)
        if ev is None or self._alone() or self._thread is not None or self._boxes is None:
            return
        t0 = perf_counter()
        staged = self._fetch()
        if staged is None:  # the tree or the output outgrew its arrays: LETs after the walk
            return
        self._fetch_ms = 1e3 * (perf_counter() - t0)
        self._thread = threading.Thread(target=self._exchange_in_thread, args=(staged,),
                                        name="galaxyview-let", daemon=True)
        self._thread.start()

    def _fetch(self):
        """After the queued export (waited for on the side stream, beside the walk): (cells,
        particles, rows per rank) in pinned host memory, or None when the tree build or the
        export's output overflowed (both grown)."""
        side, b = self._side_stream, self.buf
        side.wait_for_event(self._let_ev[1])
        status = self._pinned("status", 8, np.uint64)
        self._cuda.memcpy_dtoh_async(status, b.ptr("status"), side)
        counts = self._export.counts(side)
        if counts is None or int(status[ST_FLAGS]) & (FLAG_CELLS | FLAG_GROUPS):
            return None
        cells, parts = self._export.copy(side, counts.sum(axis=0))
        side.synchronize()
        return cells, parts, self._export.per_rank(counts, len(self._boxes))

    def _pinned(self, name: str, count: int, dtype) -> np.ndarray:
        """A page-locked host array of at least `count` elements (kept, grown as needed)."""
        buf = self._staging.get(name)
        if buf is None or buf.size < count or buf.dtype != dtype:
            buf = self._staging[name] = self._cuda.pagelocked_empty(max(count, 1), dtype)
        return buf[:count]

    def _exchange_in_thread(self, staged) -> None:
        try:
            self._lets = self._exchange(staged)
        except BaseException as exc:  # handed to the evaluating thread
            self._lets = exc

    def _exchange(self, staged):
        """Collective: the LET exchange; the imported (cells, particles) of the other ranks.
        staged: (cells, particles, rows per rank), or None (the local evaluation failed:
        nothing sent)."""
        comm = self.comm
        if staged is None:
            staged = (*let.empty(), np.zeros((comm.size, 2), np.int64))
        cells, parts, per_rank = staged
        got_cells = comm.alltoallv_rows(cells, per_rank[:, 0], "the LET exchange")
        got_parts = comm.alltoallv_rows(parts, per_rank[:, 1], "the LET exchange")
        return [(c, p) for r, (c, p) in enumerate(zip(got_cells, got_parts))
                if r != comm.rank and len(c)]

    def _export_after_walk(self, error):
        """The export of a rebuilt tree (output grown as needed), not beside the walk; None
        after a failed local evaluation."""
        if error is not None:
            return None
        if self._boxes is None:  # no first attempt reached the walk
            self._boxes = self.comm.allgather(let.domain_box(np.zeros((0, 3))),
                                              "the domain boxes").astype(np.float32)
        t0 = perf_counter()
        with self.activate():
            for _ in range(3):
                self._queue_export(self.comm.rank)
                staged = self._fetch()
                if staged is not None:
                    break
            else:
                raise EngineError("the LET export found no room on the device; "
                                  "use fewer particles per GPU")
        self._fetch_ms = 1e3 * (perf_counter() - t0)
        return staged

    def _evaluate(self, active=None) -> None:
        if active is not None:
            raise EngineError("the parallel engine evaluates the forces of all particles; "
                              "an integrator with active subsets runs on one process")
        if self._alone():
            return super()._evaluate()
        self._thread, self._lets, self._fetch_ms, self._boxes = None, None, 0.0, None
        error = None
        try:
            super()._evaluate()  # the export before the walk, the exchange beside it
        except EngineError as exc:
            error = exc
        export_ms = 0.0
        t0 = perf_counter()
        if self._thread is not None:
            export_ms = self._let_ev[1].time_since(self._let_ev[0])
            self._thread.join()
            self._thread = None
            lets = self._lets
            if isinstance(lets, BaseException):
                raise lets
        else:  # a rebuilt tree, or a failed evaluation
            staged = None
            try:
                staged = self._export_after_walk(error)
            except EngineError as exc:
                error = error or exc
            lets = self._exchange(staged)
            export_ms = self._let_ev[1].time_since(self._let_ev[0]) if staged else 0.0
        t1 = perf_counter()
        self.agree(error, "the local force evaluation")
        walk_error = None
        try:
            if lets:
                self._walk_forest(lets)
        except EngineError as exc:
            walk_error = exc
        self.agree(walk_error, "the LET walk")
        t = self.stats.timings_ms  # the export ran between the multipoles and the walk
        t["multipoles"] = max(0.0, t.get("multipoles", 0.0) - export_ms)
        self.parallel_ms.update(local_walk=t.get("walk", 0.0),
                                let_build=export_ms + self._fetch_ms,
                                let_comm=1e3 * (t1 - t0),
                                let_walk=1e3 * (perf_counter() - t1))
        self.cost = (self.stats.pp + self.stats.pc) / max(self._n, 1)

    def _walk_forest(self, lets: list) -> None:
        """The imported LETs walked by the local groups on the device; their accelerations
        and potentials added to the local ones (buffer 'acc', sorted order)."""
        mac, q0, q1, link, pos4 = let.device_forest(lets, self._n)
        cuda, b, n = self._cuda, self.buf, self._n
        p, status = b.ptr, self.buf.ptr("status")
        with self.activate():
            b._alloc("let_pos", 16 * (n + len(pos4)))
            for name, rows in (("let_mac", mac), ("let_q0", q0), ("let_q1", q1),
                               ("let_link", link)):
                b._alloc(name, rows.nbytes)
                cuda.memcpy_htod(p(name), np.ascontiguousarray(rows))
            b._alloc("let_acc", 16 * n)
            pos, _ = b.set_ptrs(self._cur)  # the local particles in the tree's order
            cuda.memcpy_dtod(p("let_pos"), pos, 16 * n)
            if len(pos4):
                cuda.memcpy_htod(p("let_pos") + 16 * n, np.ascontiguousarray(pos4))
            cuda.memset_d32(status + 8 * ST_WALK_NEXT, 0, 2)  # the walk's group counter
            eps2, G = float(self.params.eps) ** 2, float(self.params.G)
            self.kernels.launch("walk", (b.walk_grid, 1, 1), (b.walk_threads, 1, 1),
                                p("let_pos"), p("let_mac"), p("let_q0"), p("let_q1"),
                                p("let_link"), p("group_begin"), p("group_count"),
                                p("let_acc"), p("stacks"), status, eps2, G, self.pp_leaf)
            self.kernels.launch("let_add", (self._grid(), 1, 1), (256, 1, 1), p("acc"),
                                p("let_acc"), n)
            self._read_status()
        if int(self._host_status[ST_FLAGS]) & FLAG_STACK:
            raise EngineError(f"the LET walk ran out of stack at theta = "
                              f"{self.params.theta:g}: use a larger theta")
        self.stats.pp = int(self._host_status[ST_PP])  # local and LET interactions
        self.stats.pc = int(self._host_status[ST_PC])


def make_gpu_rank(params, gravity, comm, device: int) -> GPURank:
    engine = GPURank(params, gravity, device)
    engine.attach(comm)
    return engine
