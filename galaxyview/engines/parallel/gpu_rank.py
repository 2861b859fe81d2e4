"""One rank's share on a GPU: the GPU engine on the particles of its domain, plus the LETs.

Each force evaluation: the local tree, groups, multipoles and walk on the device (the GPU
engine's own phases); then the tree goes to the host (cells and sorted particles), a LET is
exported for every other domain and exchanged over MPI through host memory; the imported
LETs, as one forest under an always-opened root (let.device_forest), go back to the device
behind a copy of the local sorted positions and are walked by the engine's own walk kernel
with the local groups into a second acceleration buffer, which `let_add` adds to the local
one. The decomposition (host round trip of every particle) runs every REBALANCE_EVERY steps
(GALAXYVIEW_REBALANCE_EVERY); between them particles stay where they are and the LETs,
built from the current domain boxes, stay exact.
"""
from __future__ import annotations

import os
from time import perf_counter

import numpy as np

from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.gpu import inspect
from galaxyview.engines.gpu.constants import FLAG_STACK, ST_FLAGS, ST_PC, ST_PP, ST_WALK_NEXT
from galaxyview.engines.gpu.engine import GPUEngine
from galaxyview.engines.parallel import let
from galaxyview.engines.parallel.rank import RankMixin, pack
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
    """The downloaded device tree (gpu/inspect.download_tree) as a Tree for let.export."""
    return Tree(keys=cells["keys"], order=cells["order"], pos=cells["pos"], mass=cells["mass"],
                lo=np.zeros(3, np.float32), L=np.float32(1), scale=np.float32(1),
                n_leaf=n_leaf, level=cells["level"], body_begin=cells["body_begin"],
                body_count=cells["body_count"], child_begin=cells["child_begin"],
                child_count=cells["child_count"], parent=cells["parent"],
                level_begin=cells["level_begin"], cell_mass=cells["cell_mass"],
                com=cells["com"], quad=cells["quad"])


class GPURank(RankMixin, GPUEngine):
    extra_kernels = (("parallel LET", LET_ADD),)

    def __init__(self, params=None, gravity=None, device: int = 0):
        super().__init__(params, gravity, device)
        self.every = rebalance_every()
        self._since = 0

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
        rows = self._redistribute(pack(st.pos, st.vel, acc, pot, st.mass, st.radius, self.ids,
                                       st.component, st.galaxy))
        self.ids = rows[:, 12].astype(np.int64)
        n = len(rows)
        pos4 = np.c_[rows[:, 0:3], rows[:, 10]].astype(np.float32)
        vel4 = np.c_[rows[:, 3:6], rows[:, 13]].astype(np.float32)
        acc4 = np.c_[rows[:, 6:9], rows[:, 9]].astype(np.float32)
        self._component = rows[:, 13].astype(np.uint8)
        self._galaxy = rows[:, 14].astype(np.int16)
        self._galaxy_on_device = False
        self._radius = rows[:, 11].astype(np.float32)
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
        self._have_tree = False
        self._since = 0

    # -- forces ------------------------------------------------------------------------------
    def _evaluate(self) -> None:
        error = None
        try:
            super()._evaluate()
        except EngineError as exc:
            error = exc
        self.agree(error, "the local force evaluation")
        self._let_forces()

    def _let_forces(self) -> None:
        comm, ms, n = self.comm, self.parallel_ms, self._n
        t0 = perf_counter()
        cells = inspect.download_tree(self)  # host staging of the device tree
        tree = host_tree(cells, self.params.n_leaf)
        boxes = comm.allgather(let.domain_box(tree.pos), "the domain boxes").astype(np.float32)
        out = [let.export(tree, cells["r_open2"], boxes[r], self.pp_leaf) if r != comm.rank else
               (np.zeros((0, let.CELL_WIDTH)), np.zeros((0, let.PARTICLE_WIDTH)))
               for r in range(comm.size)]
        t1 = perf_counter()
        got_cells = comm.alltoallv([o[0] for o in out], "the LET exchange")
        got_parts = comm.alltoallv([o[1] for o in out], "the LET exchange")
        t2 = perf_counter()
        lets = [(c, p) for r, (c, p) in enumerate(zip(got_cells, got_parts))
                if r != comm.rank and len(c)]
        error = None
        try:
            if lets:
                self._walk_forest(lets)
        except EngineError as exc:
            error = exc
        self.agree(error, "the LET walk")
        ms.update(local_walk=self.stats.timings_ms.get("walk", 0.0), let_build=1e3 * (t1 - t0),
                  let_comm=1e3 * (t2 - t1), let_walk=1e3 * (perf_counter() - t2))
        self.cost = (self.stats.pp + self.stats.pc) / max(n, 1)

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
