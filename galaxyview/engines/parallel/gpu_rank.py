"""One rank's share on a GPU: the GPU engine on the particles of its domain, plus the LETs.

GPURank is the GPU engine with the rank's parts as mixins: the force evaluation with the LETs
(gpu_forces.py), the domain's boxes (gpu_boxes.py), the LET export's exchange
(gpu_exchange.py), the walk of the imported LETs (gpu_let_walk.py) and the drawing
(gpu_draw.py). This module holds the domain: at each step's start the particles that the
step's kick and drift will take out of their domain move to the domain they will be in
(migrate.py: device to device on one host), so that the force evaluation finds the domains
apart; every REBALANCE_EVERY steps (GALAXYVIEW_REBALANCE_EVERY) the splitters are made anew
from a sample of the particles, weighed by each rank's measured interactions; also at the
first step after a load, whose cut went by count. The particles' global ids, radii,
components and galaxies live on the device with them ('meta', loaded order); the rank's host
arrays of them are mirrors, read back when asked for after the device moved particles.
"""
from __future__ import annotations

from time import perf_counter

import numpy as np

from galaxyview.cuda.compile import read_kernel
from galaxyview.engines.gpu.constants import MAX_LEVEL
from galaxyview.engines.gpu.engine import GPUEngine
from galaxyview.engines.parallel import decompose, let_device
from galaxyview.engines.parallel.density_device import DeviceDensity
from galaxyview.engines.parallel.gpu_boxes import BoxesMixin, let_boxes
from galaxyview.engines.parallel.gpu_draw import DrawMixin
from galaxyview.engines.parallel.gpu_exchange import ExchangeMixin
from galaxyview.engines.parallel.gpu_forces import HOLD_BACK_SHARE, ForcesMixin, let_export
from galaxyview.engines.parallel.gpu_let_walk import HEAD_SHARE, LETWalkMixin, let_walk
from galaxyview.engines.parallel.launch import env_count
from galaxyview.engines.parallel.migrate import Migration, pack_meta, unpack_meta
from galaxyview.engines.parallel.peers import PeerBuffers, choose
from galaxyview.engines.parallel.rank import (ACC, COMPONENT, GALAXY, MASS, POS, POT, RADIUS,
                                              VEL, RankMixin)
from galaxyview.errors import EngineError

REBALANCE_EVERY = 8  # steps between new splitters (between them, only the leavers move)
DECOMPOSE_SAMPLE = 65536  # particles a rank samples for new splitters


def rebalance_every() -> int:
    return env_count("GALAXYVIEW_REBALANCE_EVERY", REBALANCE_EVERY)


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


class GPURank(ForcesMixin, LETWalkMixin, ExchangeMixin, BoxesMixin, DrawMixin, RankMixin,
              GPUEngine):
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

    def _alone(self) -> bool:
        """No other rank (one process, or not attached: the engine on its own)."""
        return self.comm is None or self.comm.size == 1


def make_gpu_rank(params, gravity, comm, device: int) -> GPURank:
    engine = GPURank(params, gravity, device)
    engine.attach(comm)
    return engine
