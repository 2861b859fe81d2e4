"""One rank's share on a GPU: the GPU engine on the particles of its domain, plus the LETs.

Each force evaluation: the GPU engine's own phases are queued (keys, sort, tree, groups,
multipoles, local walk); the local walk starts as soon as the tree is built, with a share of
its blocks held back, while the domains' boxes (their groups') are exchanged (on one host only
their counts through MPI: the boxes are read device to device) and the LET export against
every other domain is queued (let_device.py) on the export stream, beside the walk, on the
blocks held back; then these join the walk (GALAXYVIEW_LET_EXPORT=before: the export between
the multipoles and the walk, the engine's _before_walk, as with GALAXYVIEW_LET_WALK=one).
While the device walks the local tree (or its head start: below), the LETs are exchanged:
on one host only their sizes through MPI, each rank copying its part of the others' outputs
device to device (CUDA IPC, on a side stream); otherwise the compact output goes to pinned
host memory and a host thread exchanges it over MPI (the MPI need not be CUDA-aware), and the
imported LETs go up as they were received. They lie as sent
(the particles behind a copy of the local sorted positions), and `let_forest` lays them out
as one forest under an always-opened root (as let.device_forest does; behind a copy of the
local tree's cells when the two are walked as one). The local walk runs beside the exchange
and the forest is walked after it (on the export stream, behind the peer copies) into a
second buffer, which `let_add` adds; or (GALAXYVIEW_LET_WALK=one) the local walk waits for
the LETs: some groups walk the local tree while the LETs are exchanged (the head start), then
the others walk the tree and the forest together (walk_roots), and the head start's groups
the forest alone (added by let_add_groups). One agreement on errors follows the walk. When
the tree outgrew its arrays (rebuilt) or the export its output, the LETs follow the walk
instead of running beside it.
At each step's start the particles that the step's kick and drift will take out of their domain
move to the domain they will be in (migrate.py: device to device on one host), so that the
force evaluation finds the domains apart; every REBALANCE_EVERY steps
(GALAXYVIEW_REBALANCE_EVERY) the splitters are made anew from a sample of the particles,
weighed by each rank's measured interactions; also at the first step after a load, whose cut
went by count. The
particles' global ids, radii, components and galaxies live on the device with them ('meta',
loaded order); the rank's host arrays of them are mirrors, read back when asked for after the
device moved particles.
"""
from __future__ import annotations

import threading
from contextlib import suppress
from time import perf_counter

import numpy as np

from galaxyview.cuda.compile import read_kernel
from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.gpu.constants import (FLAG_CELLS, FLAG_GROUPS, FLAG_STACK, MAX_LEVEL,
                                              ST_CELLS, ST_FLAGS, ST_GROUPS, ST_LOCAL_PC,
                                              ST_LOCAL_PP, ST_PC, ST_PP, ST_WALK_NEXT,
                                              STACK_CAP)
from galaxyview.engines.gpu.engine import GPUEngine
from galaxyview.engines.gpu.phases import walk_arguments
from galaxyview.engines.parallel import decompose, let, let_device
from galaxyview.engines.parallel.density_device import DeviceDensity
from galaxyview.engines.parallel.gpu_draw import DrawMixin
from galaxyview.engines.parallel.launch import env_choice, env_count
from galaxyview.engines.parallel.let_device import DeviceBoxes
from galaxyview.engines.parallel.migrate import Migration, pack_meta, unpack_meta
from galaxyview.engines.parallel.peers import PeerBuffers, choose
from galaxyview.engines.parallel.rank import (ACC, COMPONENT, GALAXY, MASS, POS, POT, RADIUS,
                                              VEL, RankMixin)
from galaxyview.errors import EngineError

# GALAXYVIEW_LET_WALK=one: the share of the groups that walk the local tree before the LETs
# are in (the head start): 1/8 at first, then sized each evaluation to end HEAD_MARGIN_MS
# after the LETs are copied in, within [1/64, 1/2]
HEAD_SHARE, HEAD_SHARES, HEAD_MARGIN_MS = 1 / 8, (1 / 64, 1 / 2), 0.3
# the export beside the local walk (GALAXYVIEW_LET_EXPORT=beside): the walk's launch holds
# back a share of its blocks (at least HOLD_BACK_MIN) for the export's launches, which take
# twice as many; then the blocks held back join the walk. 1/16 at first, then sized each
# evaluation for the export to end EXPORT_AIM of the way through the walk, within the shares
HOLD_BACK_SHARE, HOLD_BACK_SHARES, HOLD_BACK_MIN, EXPORT_AIM = 1 / 16, (1 / 64, 1 / 4), 4, 0.5
REBALANCE_EVERY = 8  # steps between new splitters (between them, only the leavers move)
DECOMPOSE_SAMPLE = 65536  # particles a rank samples for new splitters
EXPORT_TRIES = 6  # the export queued again while its list or output grows (doubled, +25%)


def rebalance_every() -> int:
    return env_count("GALAXYVIEW_REBALANCE_EVERY", REBALANCE_EVERY)


def let_boxes() -> str:
    """What describes a domain to the LET export (GALAXYVIEW_LET_BOXES): "groups" (the boxes
    of its walk's groups, the default) or "domain" (its bounding box alone: fewer tests, a
    larger LET)."""
    return env_choice("GALAXYVIEW_LET_BOXES", ("groups", "domain"))


def let_walk() -> str:
    """How the imported LETs are walked (GALAXYVIEW_LET_WALK): "apart" (the default: the local
    tree walked while the LETs are exchanged, then their forest in a second walk) or "one"
    (the local tree and the forest walked together once the LETs are there, after a head
    start of some groups on the local tree alone while they are exchanged; docs/parallel.md
    has both measured)."""
    return env_choice("GALAXYVIEW_LET_WALK", ("apart", "one"))


def let_export() -> str:
    """When the LET export runs (GALAXYVIEW_LET_EXPORT): "beside" the local walk (the default,
    with the walks apart: the walk starts as soon as the tree is built, while the boxes are
    shared and the export is queued; a few of its blocks wait for the export and then join)
    or "before" it (the walk queued behind the export, the device idle while the host shares
    the boxes and queues the export). GALAXYVIEW_LET_WALK=one exports before the walk."""
    return env_choice("GALAXYVIEW_LET_EXPORT", ("beside", "before"))


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


def _mirror(name: str):
    """A host array of the particles' meta in loaded order (GPURank): read back from the
    device when the device moved particles; set, it goes to the device before the next
    migration."""
    key = "_host" + name

    def get(self):
        if self._meta_stale:
            self._meta_to_host()
        return self.__dict__[key]

    def put(self, value):
        if self._meta_stale:
            self._meta_to_host()
        self.__dict__[key] = value
        self._meta_dirty = True

    return property(get, put)


class GPURank(DrawMixin, RankMixin, GPUEngine):
    extra_kernels = (("parallel_sum.cu", read_kernel("parallel_sum.cu")),
                     ("parallel_let.cu", read_kernel("parallel_let.cu")),
                     ("parallel_domain.cu", read_kernel("parallel_domain.cu")),
                     ("parallel_density.cu", read_kernel("parallel_density.cu")),
                     ("render_pack.cu", read_kernel("render_pack.cu")),
                     ("render_splat.cu", read_kernel("render_splat.cu")))
    row_dtype = np.float32  # the device holds float32: half the bytes through the host
    _meta_stale = False  # the device moved particles: the host mirrors are out of date
    _meta_dirty = True  # a host mirror was set: the device's meta is out of date
    ids, _component = _mirror("ids"), _mirror("_component")
    _galaxy, _radius = _mirror("_galaxy"), _mirror("_radius")

    def __init__(self, params=None, gravity=None, device: int = 0):
        super().__init__(params, gravity, device)
        self.every = rebalance_every()
        self.let_boxes = let_boxes()
        self.let_walk = let_walk()
        self.let_export = let_export()
        self._beside = False  # this attempt's export runs beside the local walk
        self._joined = False  # this evaluation's held-back blocks joined the walk (event 12)
        self._hold_share, self._held = HOLD_BACK_SHARE, 0
        self._walk_left = False  # this evaluation's local walk waits for the LETs (walk_roots)
        self._walk_queued = None  # where this evaluation's LET walk is queued: "side", "null"
        self._cells_built = self._groups_built = self._head = 0
        self._head_share = HEAD_SHARE
        self._since = 0
        self._by_count = None  # evaluations when the splitters were made by count (a load)
        self._thread, self._lets, self._fetch_ms, self._boxes = None, None, 0.0, None
        self._in_span, self._sent_bytes, self._recv = False, 0, {}
        self._import_error = None
        self._depth = MAX_LEVEL  # the tree's deepest level: where the LET export stops
        self._staging: dict = {}  # pinned host buffers
        with self.activate():
            self._side_stream = self._cuda.Stream(flags=1)  # CU_STREAM_NON_BLOCKING
            self._export_stream = self._cuda.Stream(flags=1)  # beside: export, join, LET walk
            # the multipoles' end, the export's start and end; the LET import's upload,
            # forest and walk; 6: the group boxes; 7, 8: the peer copies of the LETs; 9: the
            # LET walk's end; 10, 11: the head start of the local walk; 12: the joined walk
            self._let_ev = tuple(self._cuda.Event() for _ in range(13))
            self._export = let_device.DeviceExport(self)
        self._migration = Migration(self)
        self._density = DeviceDensity(self)
        self.evaluations = 0  # force evaluations (each reorders the particles)
        self._peer_path = None  # "device" or "host" (peers.choose), agreed when first needed
        self._images = PeerBuffers("the light images", "light_image")  # rank 0 adds them
        self._gboxes = PeerBuffers("the group boxes", "let_gboxes")  # the export reads them

    def peer_path(self) -> str:
        """Collective the first time: "device" where the ranks' GPUs exchange device to
        device (peers.py), else "host"."""
        if self._peer_path is None:
            self._peer_path = "host" if self._alone() else choose(self)
        return self._peer_path

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()
        self._recv.clear()
        if getattr(self, "buf", None) is not None:
            with self.activate():  # the pinned buffers go while their context is there
                self._staging.clear()
                self._migration.close()
                self._export.close()
                self._images.close()
                self._gboxes.close()
        super().close()

    # -- the domain ------------------------------------------------------------------------
    def load_part(self, state, ids: np.ndarray, exact=None) -> None:
        super().load_part(state, ids, exact)
        self.peer_path()  # agreed now, while every rank is here

    def _load_rows(self, rows: np.ndarray, local) -> None:
        self._meta_stale = False  # the device's meta goes: no need to read it back
        with self.activate():  # room for a tenth more: the domains' shares move
            self.buf.ensure(int(1.1 * len(rows)) + 64, self._n_sm, self._walk_blocks,
                            self._walk_threads)
        self._since = 0
        self._by_count = self.evaluations  # cut by count: anew once forces were measured
        self.load(local)  # float32 on the device: float64 positions are rounded once

    def _meta_to_device(self) -> None:
        """(in the context) The host mirrors to the device's meta, when one was set."""
        if not self._meta_dirty:
            return
        meta = pack_meta(self.ids, self._radius, self._component, self._galaxy)
        self._cuda.memcpy_htod(self.buf.per_particle("meta", 16), meta)
        self._meta_dirty = False

    def _meta_to_host(self) -> None:
        """The device's meta to the host mirrors, when the device moved particles."""
        if not self._meta_stale:
            return
        with self.activate():
            meta = self._download(self.buf.ptr("meta"), np.int32, 4 * self._n).reshape(-1, 4)
        d = self.__dict__
        d["_hostids"], d["_host_radius"], d["_host_component"], d["_host_galaxy"] = \
            unpack_meta(meta)
        self._meta_stale = False

    def local_view(self, exact: bool) -> tuple:
        st = self.state()
        part = (self.ids, st.pos, st.vel, st.mass, st.component, st.galaxy, st.radius)
        return part + (self.accelerations() if exact else ())

    def step(self, n: int = 1) -> None:
        for _ in range(self._step_count(n)):
            if not self._alone():
                self.comm.waited()  # from here: this step's
            self.parallel_ms.update(decompose=0.0, exchange=0.0)  # this step's, if any
            measured = self._by_count is not None and self.evaluations > self._by_count
            self._domains(self._since >= self.every or measured)
            super().step(1)
            self._since += 1
            t, ms = self.stats.timings_ms, self.parallel_ms  # the LET phases are not integration
            t["integrate"] -= ms["let_build"] + ms["let_comm"] + ms["let_walk"]
            if not self._alone():
                ms.update(work=t.get("walk", 0.0) + ms.get("let_walk_gpu", 0.0),
                          particles=float(self._n), mpi_wait=self.comm.waited())

    def _domains(self, decompose_anew: bool) -> None:
        """Collective, at a step's start: new splitters when `decompose_anew` (from a sample
        of the particles along the curve: its median point centres the cube, its keys weighed
        by this rank's cost give the cuts); then every particle that the step's kick and
        drift will take out of its domain moves to the domain it will be in (migrate.py), so
        that the force evaluation finds the domains apart."""
        if self._alone():
            return
        t0 = perf_counter()
        parts = {}
        if decompose_anew:
            pos32 = self._sample_positions(DECOMPOSE_SAMPLE)
            ta = perf_counter()
            self.cube = decompose.global_cube(self.comm, pos32)
            tb = perf_counter()
            keys = self._sample_keys(DECOMPOSE_SAMPLE)  # the same rows'
            tc = perf_counter()
            self.cuts = decompose.splitters(self.comm, keys, self.cost,
                                            per_key=self._n / max(len(keys), 1))
            self._since, self._by_count = 0, None
            parts = dict(decompose_sample=1e3 * (ta - t0), decompose_cube=1e3 * (tb - ta),
                         decompose_keys=1e3 * (tc - tb),
                         decompose_cuts=1e3 * (perf_counter() - tc))
        t1 = perf_counter()
        moved = self._migration.run(self.cube, self.cuts, self.params.dt)
        if self.comm.allreduce([self._n == 0], "max", "the domain sizes")[0]:
            raise EngineError("a domain lost all its particles; use fewer processes")
        self.parallel_ms.update(decompose=1e3 * (t1 - t0), exchange=1e3 * (perf_counter() - t1),
                                **moved, **parts)

    def _sample_positions(self, count: int) -> np.ndarray:
        """(m, 3) float32: every k-th particle's position along the sorted order, about
        `count` of them (strided copies)."""
        with self.activate():
            self._sync()
            pos, _ = self.buf.set_ptrs(self._cur)
            return self._download_rows(pos, np.float32, 4, *self._stride(count))[:, :3]

    def _sample_keys(self, count: int) -> np.ndarray:
        """(m,) uint64: the Peano-Hilbert keys in self.cube of the rows _sample_positions(count)
        gives, made on the device (as the migration makes every particle's)."""
        stride, rows = self._stride(count)
        lo, _, scale = self.cube
        b = self.buf
        with self.activate():
            b.room("dom_keys", 8 * max(rows, 1))
            pos, _ = b.set_ptrs(self._cur)
            self.kernels.launch("domain_sample_keys", (self._grid(rows), 1, 1), (256, 1, 1),
                                pos, rows, stride, *(float(v) for v in lo), float(scale),
                                b.ptr("dom_keys"))
            return self._download(b.ptr("dom_keys"), np.uint64, rows)

    def _upload_rows(self, rows: np.ndarray, ids: np.ndarray) -> None:
        """This rank's particles anew from rows (rank.pack's columns, forces included: no
        evaluation) and their global ids; room for a tenth more (the domains' share moves)."""
        n = len(rows)
        pos4 = np.ascontiguousarray(np.c_[rows[:, POS], rows[:, MASS]], np.float32)
        vel4 = np.ascontiguousarray(np.c_[rows[:, VEL], rows[:, COMPONENT]], np.float32)
        acc4 = np.ascontiguousarray(np.c_[rows[:, ACC], rows[:, POT]], np.float32)
        self._meta_stale = False  # the device's meta goes: no need to read it back
        self.ids = np.asarray(ids, np.int64)
        self._component = rows[:, COMPONENT].astype(np.uint8)
        self._galaxy = rows[:, GALAXY].astype(np.int16)
        self._radius = rows[:, RADIUS].astype(np.float32)
        cuda = self._cuda
        with self.activate():
            self.buf.ensure(int(1.1 * n) + 64, self._n_sm, self._walk_blocks,
                            self._walk_threads)
            self._n, self._cur = n, 0
            pos, vel = self.buf.set_ptrs(0)
            cuda.memcpy_htod(pos, pos4)
            cuda.memcpy_htod(vel, vel4)
            cuda.memcpy_htod(self.buf.ptr("id0"), np.arange(n, dtype=np.uint32))
            cuda.memcpy_htod(self.buf.ptr("acc"), acc4)
        self._moved()

    def _moved(self) -> None:
        """The particle set changed under the engine (its forces came with it)."""
        self._galaxy_on_device = False
        self._free_com()
        self._have_tree = self._tree_fresh = False

    # -- forces ------------------------------------------------------------------------------
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

    def _domain_boxes(self, ev):
        """(B, 6) float32 lo, hi: the boxes of the groups of the tree just built (their
        particles), or where the build overflowed the domain's bounding box. On the device
        path the groups' boxes stay on the device: DeviceBoxes (the others copy them)."""
        self._queue_boxes(ev)
        return self._read_boxes()

    def _queue_boxes(self, ev) -> None:
        """(in the context) The groups' boxes computed behind the multipoles (event 6), and
        their count, flags, level starts and the bounding box copied on the side stream."""
        cuda, b, side = self._cuda, self.buf, self._side_stream
        p = b.ptr
        self._group_boxes_buffer()
        npos, _ = b.set_ptrs(self._cur)
        self.kernels.launch("let_group_boxes", (self._grid(), 1, 1), (256, 1, 1), npos,
                            p("group_begin"), p("group_count"), p("status"), p("let_gboxes"))
        self._let_ev[6].record()
        part = self._pinned("bbox", 6 * 4 * self._n_sm, np.float32)
        status = self._pinned("status", 8, np.uint64)
        lb = self._pinned("lb", MAX_LEVEL + 3, np.int32)
        side.wait_for_event(ev[2])
        cuda.memcpy_dtoh_async(part, p("bbox"), side)
        side.wait_for_event(self._let_ev[6])
        cuda.memcpy_dtoh_async(status, p("status"), side)
        cuda.memcpy_dtoh_async(lb, p("lb"), side)

    def _read_boxes(self):
        """_domain_boxes' result, once the side stream's copies (_queue_boxes) are in."""
        cuda, b, side = self._cuda, self.buf, self._side_stream
        p = b.ptr
        side.synchronize()
        part = self._pinned("bbox", 6 * 4 * self._n_sm, np.float32)
        status = self._pinned("status", 8, np.uint64)
        lb = self._pinned("lb", MAX_LEVEL + 3, np.int32)
        n_groups = int(status[ST_GROUPS])
        if not int(status[ST_FLAGS]) & FLAG_CELLS:  # the export walks no deeper
            self._depth = let_device.deepest_level(lb)
        valid = not int(status[ST_FLAGS]) & (FLAG_CELLS | FLAG_GROUPS) and n_groups <= b.group_cap
        self._groups_built = n_groups if valid else 0  # (the head start's share of them)
        if self.let_boxes == "domain" or not valid:
            part = part.reshape(-1, 6)
            return np.r_[part[:, :3].min(axis=0), part[:, 3:].max(axis=0)].reshape(1, 6)
        if self.peer_path() == "device":
            return DeviceBoxes(p("let_gboxes"), n_groups)  # written: the side stream waited
        groups = self._pinned("gboxes", 6 * n_groups, np.float32)
        cuda.memcpy_dtoh_async(groups, p("let_gboxes"), side)  # these only
        side.synchronize()
        return groups.reshape(-1, 6).copy()

    def _group_boxes_buffer(self) -> int:
        """(in the context) The buffer of this rank's group boxes ('let_gboxes'), that the
        other ranks open on the device path."""
        return self._gboxes.grow(self.buf, 24 * max(self.buf.group_cap, 1))

    def _own_boxes(self) -> np.ndarray:
        return self._boxes[self.comm.rank] if self._boxes else np.zeros((0, 6))

    def _share_boxes(self, mine) -> list:
        """Collective: every rank's boxes ((B_r, 6) float32, or DeviceBoxes), from this
        rank's. Through MPI; on the device path only the counts (and a bounding box or none)
        go through MPI, the groups' boxes stay on their devices, opened through CUDA IPC."""
        comm = self.comm
        if self.peer_path() != "device":
            return comm.alltoallv([mine.astype(np.float32)] * comm.size, "the domain boxes")
        on_device = isinstance(mine, DeviceBoxes)
        with self.activate():  # (allocated here when no tree offered its groups' boxes)
            self._group_boxes_buffer()
        row = np.zeros(9)  # count, on the device, generation, the box (host boxes: one)
        count = len(mine) if on_device else min(len(mine), 1)
        row[:3] = count, on_device, self._gboxes.gen
        if not on_device and len(mine):  # (the bounding box: one already)
            m = np.asarray(mine, np.float32).reshape(-1, 6)
            row[3:] = np.r_[m[:, :3].min(axis=0), m[:, 3:].max(axis=0)]
        table = comm.allgather(row, "the domain boxes")
        with self.activate():
            self._gboxes.open(self, table[:, 2])
        boxes = []
        for r, (count, dev, _, *box) in enumerate(table):
            if r == comm.rank:
                boxes.append(mine)
            elif dev:
                boxes.append(DeviceBoxes(self._gboxes[r], int(count)))
            else:
                boxes.append(np.asarray(box, np.float32).reshape(1, 6)[:int(count)])
        return boxes

    def _alone(self) -> bool:
        """No other rank (one process, or not attached: the engine on its own)."""
        return self.comm is None or self.comm.size == 1

    def _queue_export(self, skip: int, stream=None, blocks: int | None = None) -> None:
        """The export against every box of self._boxes but boxes[skip], between two events,
        on `stream` (None: the engine's), `blocks` a launch (None: DeviceExport's)."""
        self._let_ev[1].record(stream)
        self._export.queue(self._boxes, skip, self._depth, stream, blocks)
        self._let_ev[2].record(stream)

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

    def _fetch(self, copy: bool = True):
        """After the queued export (waited for on the side stream, beside the walk): (cells,
        particles, rows per rank) in pinned host memory (without `copy`: None, None, rows per
        rank), or None when the tree build or the export's output overflowed (both grown)."""
        side, b = self._side_stream, self.buf
        side.wait_for_event(self._let_ev[2])
        status = self._pinned("status", 8, np.uint64)
        self._cuda.memcpy_dtoh_async(status, b.ptr("status"), side)
        counts = self._export.counts(side)
        self._cells_built = int(status[ST_CELLS])  # (the tree the LETs' walk joins)
        if counts is None or int(status[ST_FLAGS]) & (FLAG_CELLS | FLAG_GROUPS):
            return None
        per_rank = self._export.per_rank(counts, len(self._boxes))
        if not copy:
            return None, None, per_rank
        cells, parts = self._export.copy(side, counts.sum(axis=0))
        side.synchronize()
        return cells, parts, per_rank

    def _pinned(self, name: str, count: int, dtype) -> np.ndarray:
        """A page-locked host array of at least `count` elements (kept, grown as needed);
        made in the engine's context, which the LET thread (receiving into it) lacks."""
        buf = self._staging.get(name)
        if buf is None or buf.size < count or buf.dtype != dtype:
            with self.activate():
                buf = self._staging[name] = let_device.pinned(self._cuda, count, dtype)
        return buf[:count]

    def _recv_rows(self, name: str, rows: int, width: int) -> np.ndarray:
        """Pinned (rows, width) float32 that the LETs are received into (uploaded as they
        are); self._recv[name] is the whole of it."""
        self._recv.pop(name, None)  # a buffer outgrown is freed in the context, not here
        out = self._pinned("recv_" + name, rows * width, np.float32).reshape(rows, width)
        self._recv[name] = out
        return out

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
        self._sent_bytes = cells.nbytes + parts.nbytes
        got_cells = comm.alltoallv_rows(cells, per_rank[:, 0], "the LET exchange",
                                        lambda n: self._recv_rows("cells", n, let.CELL_WIDTH))
        got_parts = comm.alltoallv_rows(parts, per_rank[:, 1], "the LET exchange",
                                        lambda n: self._recv_rows("parts", n,
                                                                  let.PARTICLE_WIDTH))
        return [(len(c), len(p)) for r, (c, p) in enumerate(zip(got_cells, got_parts))
                if r != comm.rank and len(c)]

    def _exchange_peers(self, staged) -> list:
        """Collective, on one host: the LET exchange device to device. Every rank's LET
        sizes (and its output buffers' generations) through MPI; then the other ranks'
        outputs, opened through CUDA IPC, give this rank its part, copied on the side stream
        into the import buffers (events 7, 8). Their exports are done (each rank waited
        for its own before the allgather), and none writes its output again before the
        next evaluation, which starts after this one's last collective: this rank's copies
        are done by then (its LET walk waited for them). Returns the LETs' sizes, as
        _exchange. staged: as _exchange's."""
        comm, ex, cuda = self.comm, self._export, self._cuda
        k, me = comm.size, comm.rank
        per_rank = staged[2] if staged is not None else np.zeros((k, 2), np.int64)
        with self.activate():
            ex.ensure()  # (a rank whose evaluation failed before its export offers one too)
        table = comm.allgather(np.r_[per_rank.reshape(-1), ex.cells.gen, ex.parts.gen],
                               "the LET sizes")
        counts = table[:, :2 * k].astype(np.int64).reshape(k, k, 2)  # [from, to]
        before = counts[:, :me].sum(axis=1)  # rows ahead of this rank's in each output
        sources = [r for r in range(k) if r != me and counts[r, me, 0] > 0]
        sizes = counts[sources, me].reshape(-1, 2)
        self._sent_bytes = 4 * int(let.CELL_WIDTH * per_rank[:, 0].sum() +
                                   let.PARTICLE_WIDTH * per_rank[:, 1].sum())
        cw, pw = 4 * let.CELL_WIDTH, 4 * let.PARTICLE_WIDTH
        with self.activate():
            ex.cells.open(self, table[:, -2])
            ex.parts.open(self, table[:, -1])
            try:  # (no collective follows: the error waits for the evaluation's agreement)
                self._import_buffers(*(int(v) for v in sizes.sum(axis=0)))
            except EngineError as exc:
                self._import_error = exc
                return []
            p, side, (c_at, p_at) = self.buf.ptr, self._side_stream, (0, self._n)
            self._let_ev[7].record(side)
            for r, (nc, npart) in zip(sources, sizes.tolist()):
                c0, p0 = (int(v) for v in before[r])
                cuda.memcpy_dtod_async(p("let_rows") + cw * c_at, ex.cells[r] + cw * c0,
                                       cw * nc, side)
                if npart:
                    cuda.memcpy_dtod_async(p("let_pos") + pw * p_at, ex.parts[r] + pw * p0,
                                           pw * npart, side)
                c_at, p_at = c_at + nc, p_at + npart
            self._let_ev[8].record(side)
        return [tuple(int(v) for v in row) for row in sizes]

    def _export_after_walk(self, error, copy: bool = True):
        """The export of a rebuilt tree (output grown as needed), not beside the walk; None
        after a failed local evaluation."""
        if error is not None:
            return None
        if self._boxes is None:  # no first attempt reached the walk
            self._boxes = self._share_boxes(np.zeros((0, 6), np.float32))
        t0 = perf_counter()
        with self.activate():
            staged = self._export_fitted(self.comm.rank, copy)
        self._fetch_ms = 1e3 * (perf_counter() - t0)
        return staged

    def _export_fitted(self, skip: int, copy: bool = True):
        """(in the context) The export against self._boxes but boxes[skip], waited for and
        queued again while its list or output grows: _fetch's (cells, particles, rows per
        rank)."""
        for _ in range(EXPORT_TRIES):
            self._queue_export(skip)
            staged = self._fetch(copy)
            if staged is not None:
                return staged
        raise EngineError("the LET export found no room on the device; "
                          "use fewer particles per GPU")

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

    def _pinned_copy(self, name: str, values: np.ndarray) -> np.ndarray:
        out = self._pinned(name, values.size, values.dtype)
        out[:] = values.reshape(-1)
        return out


def make_gpu_rank(params, gravity, comm, device: int) -> GPURank:
    engine = GPURank(params, gravity, device)
    engine.attach(comm)
    return engine
