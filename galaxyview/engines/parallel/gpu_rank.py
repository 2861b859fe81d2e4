"""One rank's share on a GPU: the GPU engine on the particles of its domain, plus the LETs.

Each force evaluation: the GPU engine's own phases are queued (keys, sort, tree, groups,
multipoles, local walk); once the multipoles are done the tree (cells, multipoles, sorted
positions) is copied to pinned host memory on a side stream while the device walks the local
tree, and a host thread exchanges the domain boxes, exports a LET for every other domain and
exchanges the LETs over MPI (through host memory: the MPI need not be CUDA-aware). The
imported LETs, one forest under an always-opened root (let.device_forest), go to the device
behind a copy of the local sorted positions; the engine's own walk kernel walks them with the
local groups into a second buffer, which `let_add` adds to the local forces. When the tree
outgrew its arrays (rebuilt), the LETs follow the walk instead of running beside it. The
decomposition (every particle through the host) runs every REBALANCE_EVERY steps
(GALAXYVIEW_REBALANCE_EVERY); in between particles stay on their GPU, and the LETs, built
from the current domain boxes, stay exact.
"""
from __future__ import annotations

import os
import threading
from time import perf_counter

import numpy as np

from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.gpu import inspect
from galaxyview.engines.gpu.constants import (FLAG_CELLS, FLAG_GROUPS, FLAG_STACK, ST_CELLS,
                                              ST_FLAGS, ST_PC, ST_PP, ST_WALK_NEXT)
from galaxyview.engines.gpu.engine import GPUEngine
from galaxyview.engines.parallel import let
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
    extra_kernels = (("parallel LET", LET_ADD),)
    row_dtype = np.float32  # the device holds float32: half the bytes through the host

    def __init__(self, params=None, gravity=None, device: int = 0):
        super().__init__(params, gravity, device)
        self.every = rebalance_every()
        self._since = 0
        self._thread, self._lets, self._staged_ms = None, None, 0.0
        self._staging: dict = {}  # pinned host buffers of the staged tree
        with self.activate():
            self._side_stream = self._cuda.Stream(flags=1)  # CU_STREAM_NON_BLOCKING

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
    def _force(self, ev, active=None, refit=False) -> None:
        """The local phases (queued, not waited for); then, on a first attempt, the tree is
        staged to the host on a side stream once the multipoles are done, and the LET exchange
        starts on a host thread while the device walks the local tree. (Forces of all
        particles only: ParallelEngine runs shared steps.)"""
        super()._force(ev, active, refit)
        if ev is None or self.comm.size == 1 or self._thread is not None:
            return
        self._wait(ev[4])  # the multipoles: the tree is complete, the walk runs on
        t0 = perf_counter()
        staged = self._stage_tree()
        if staged is None:  # the tree outgrew its arrays: built again, LETs after the walk
            return
        self._staged_ms = 1e3 * (perf_counter() - t0)
        self._thread = threading.Thread(target=self._exchange_in_thread, args=(staged,),
                                        name="galaxyview-let", daemon=True)
        self._thread.start()

    def _stage_tree(self):
        """The device tree's cells, multipoles and sorted positions in pinned host memory,
        copied on a stream of their own (beside the walk): (Tree, r_open^2), or None when
        the build overflowed."""
        cuda, b, n = self._cuda, self.buf, self._n
        side = self._side_stream
        status = self._pinned("status", 8, np.uint64)
        cuda.memcpy_dtoh_async(status, b.ptr("status"), side)
        side.synchronize()
        if int(status[ST_FLAGS]) & (FLAG_CELLS | FLAG_GROUPS):
            return None
        n_cells = int(status[ST_CELLS])
        get = {}
        for name, dtype, width in (("cell_mac", np.float32, 4), ("cell_q0", np.float32, 4),
                                   ("cell_q1", np.float32, 4), ("child", np.int32, 1),
                                   ("nchild", np.int32, 1), ("begin", np.int32, 1),
                                   ("count", np.int32, 1)):
            get[name] = self._pinned(name, n_cells * width, dtype)
            cuda.memcpy_dtoh_async(get[name], b.ptr(name), side)
        pos, _ = b.set_ptrs(self._cur)  # the sorted set the walk reads
        p4 = self._pinned("pos", 4 * n, np.float32)
        cuda.memcpy_dtoh_async(p4, pos, side)
        side.synchronize()
        mac, q0, q1 = (get[k].reshape(-1, 4) for k in ("cell_mac", "cell_q0", "cell_q1"))
        p4 = p4.reshape(-1, 4)
        cells = dict(  # in inspect.download_tree's terms
            pos=p4[:, :3], mass=p4[:, 3], body_begin=get["begin"].astype(np.int64),
            body_count=get["count"].astype(np.int64), child_begin=get["child"].astype(np.int64),
            child_count=get["nchild"].astype(np.int64), com=mac[:, :3], r_open2=mac[:, 3],
            cell_mass=q1[:, 3], quad=np.concatenate([q0, q1[:, :2]], 1) / np.float32(3))
        return host_tree(cells, self.params.n_leaf), cells["r_open2"]

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
        """Collective: the domain boxes, a LET for every other domain, the LET exchange; the
        imported (cells, particles) of the other ranks and the ms of building the LETs.
        staged: (Tree, r_open^2), or None (the local evaluation failed: nothing sent)."""
        comm = self.comm
        tree, r_open2 = staged if staged is not None else (None, None)
        t0 = perf_counter()
        box = let.domain_box(tree.pos if tree is not None else np.zeros((0, 3), np.float32))
        boxes = comm.allgather(box, "the domain boxes").astype(np.float32)
        empty = (np.zeros((0, let.CELL_WIDTH)), np.zeros((0, let.PARTICLE_WIDTH)))
        out = [let.export(tree, r_open2, boxes[r], self.pp_leaf)
               if r != comm.rank and tree is not None else empty for r in range(comm.size)]
        build_ms = 1e3 * (perf_counter() - t0)
        got_cells = comm.alltoallv([o[0] for o in out], "the LET exchange")
        got_parts = comm.alltoallv([o[1] for o in out], "the LET exchange")
        lets = [(c, p) for r, (c, p) in enumerate(zip(got_cells, got_parts))
                if r != comm.rank and len(c)]
        return lets, build_ms

    def _evaluate(self, active=None) -> None:
        if active is not None:
            raise EngineError("the parallel engine evaluates the forces of all particles; "
                              "an integrator with active subsets runs on one process")
        if self.comm.size == 1:
            return super()._evaluate()
        self._thread, self._lets, self._staged_ms = None, None, 0.0
        error = None
        try:
            super()._evaluate()  # _force starts the LET exchange beside the walk
        except EngineError as exc:
            error = exc
        t0 = perf_counter()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            result = self._lets
            if isinstance(result, BaseException):
                raise result
        else:  # staged after the walk: a rebuilt tree, or a failed evaluation
            result = self._exchange(None if error is not None else self._download_tree())
        t1 = perf_counter()
        self.agree(error, "the local force evaluation")
        lets, build_ms = result
        walk_error = None
        try:
            if lets:
                self._walk_forest(lets)
        except EngineError as exc:
            walk_error = exc
        self.agree(walk_error, "the LET walk")
        self.parallel_ms.update(local_walk=self.stats.timings_ms.get("walk", 0.0),
                                let_build=self._staged_ms + build_ms,
                                let_comm=1e3 * (t1 - t0),
                                let_walk=1e3 * (perf_counter() - t1))
        self.cost = (self.stats.pp + self.stats.pc) / max(self._n, 1)

    def _download_tree(self):
        """(Tree, r_open^2) of the device tree, copied after the walk."""
        t0 = perf_counter()
        cells = inspect.download_tree(self)
        self._staged_ms = 1e3 * (perf_counter() - t0)
        return host_tree(cells, self.params.n_leaf), cells["r_open2"]

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
