"""GPUEngine: the whole step on the device (Bonsai's tree code plus the physics modules).

A force evaluation runs, all on the GPU: bounding cube, Morton keys, radix sort and reorder
(keys_sort); tree levels and groups (build); float64 multipoles (multipoles); the group-wise
tree walk (walk); then the host reads 8 status words back (interaction counts, overflow flags)
and grows the tree's arrays and evaluates again when they were too small. A step is the
integrator's kernels around its force evaluations (integrate), then the boundary and collision
modules (engines/modules.py).
"""
from __future__ import annotations

import os

import numpy as np

from galaxyview.cuda import DeviceParticles, DeviceView, probe
from galaxyview.cuda.compile import read_kernel
from galaxyview.cuda.context import primary_context, pushed
from galaxyview.engines import modules
from galaxyview.engines.base import PHASES, Checkpoint, Energies, Engine, StepStats
from galaxyview.engines.gpu.buffers import Buffers
from galaxyview.engines.gpu.constants import (DENSITY_MAX_LEVEL, DENSITY_N_MIN, FLAG_CELLS,
                                              FLAG_GROUPS, FLAG_NONFINITE, FLAG_STACK,
                                              MAX_LEVEL, ST_FLAGS, ST_PC, ST_PP, ST_TILE0)
from galaxyview.engines.gpu.module import compile_kernels
from galaxyview.engines.gpu.phases import run_force
from galaxyview.engines.system import DeviceActive, DeviceSystem
from galaxyview.errors import EngineError
from galaxyview.model.exact import ExactState
from galaxyview.model.state import ParticleState, Selection

GROUP_MAX = 64  # the walk holds at most two particles per lane
# A run of GROUP_MAX sorted particles is cut where its smallest enclosing cell holds more than
# this many particles (kernels/nbody_tree.cu make_groups); GALAXYVIEW_GROUP_SPLIT tunes it.
GROUP_SPLIT = 2048
# An accepted leaf of at most this many particles is evaluated as p-p pairs (cheaper than one
# quadrupole interaction, and exact).
PP_LEAF_MAX = 2
MAX_N = 2**30
COM_MASKS = 4  # centre_of_mass: masks kept on the device (a galaxy's each, the followed one)
# Forces on an active subset may refit the last tree (new moments and opening radii of the
# same cells, no sort) while the active particles are at most this fraction of all and no more
# than REFIT_MAX evaluations passed since the last rebuild; GALAXYVIEW_TREE_REFIT sets the
# fraction ("off" = 0). Measured on a 1M merger (H100, docs/gpu-engine.md): refitted trees
# cost 1.5x the interactions and more energy error than a rebuild saves, so by default
# every evaluation rebuilds.
REFIT_FRACTION = 0.0
REFIT_MAX = 64


def refit_fraction() -> float:
    """REFIT_FRACTION, or GALAXYVIEW_TREE_REFIT (off = 0: always rebuild)."""
    raw = os.environ.get("GALAXYVIEW_TREE_REFIT", "").strip().lower()
    if not raw:
        return REFIT_FRACTION
    if raw == "off":
        return 0.0
    try:
        return float(raw)
    except ValueError:
        raise EngineError(f"GALAXYVIEW_TREE_REFIT={raw!r} is neither 'off' nor a fraction; "
                          "unset it or give e.g. 0.25") from None


def group_split(gmax: int) -> int:
    """The group splitting threshold (GROUP_SPLIT, or GALAXYVIEW_GROUP_SPLIT), >= gmax."""
    raw = os.environ.get("GALAXYVIEW_GROUP_SPLIT", "")
    try:
        value = int(raw) if raw else GROUP_SPLIT
    except ValueError:
        raise EngineError(f"GALAXYVIEW_GROUP_SPLIT={raw!r} is not an integer; unset it or give "
                          "a particle count such as 512") from None
    return max(gmax, value)


class _Particles(DeviceSystem):
    """The GPU engine's system: its arrays and kernels, for the physics modules."""

    def __init__(self, engine: "GPUEngine"):
        self._engine = engine

    @property
    def params(self):
        return self._engine.params

    @property
    def n(self) -> int:
        return self._engine._n

    def particles(self) -> DeviceParticles:
        e = self._engine
        pos, vel = e.buf.set_ptrs(e._cur)
        return DeviceParticles(pos, vel, e.buf.ptr("acc"), e._n, e.buf.ptr(f"id{e._cur}"),
                               e._radius_ptr())

    def launch(self, kernel: str, *args, grid=None) -> None:
        e = self._engine
        if grid is None:
            grid = (e._grid(), 1, 1)
        elif isinstance(grid, int):
            grid = (grid, 1, 1)
        else:
            grid = (*grid, 1, 1)[:3]
        e.kernels.launch(kernel, grid, (256, 1, 1), *args)

    @property
    def multiprocessors(self) -> int:
        return self._engine._n_sm

    def account(self, timings_ms: dict, pp: int) -> None:
        e = self._engine
        e.stats = StepStats({**dict.fromkeys(PHASES, 0.0), **timings_ms}, int(pp), 0, e._n)

    def forces(self, active=None, jerk: bool = False) -> None:
        e = self._engine
        if jerk:
            self._refuse_jerk(e.gravity)
        if active is not None and not isinstance(active, DeviceActive):
            raise EngineError("the GPU engine takes an active subset as a DeviceActive (levels "
                              "on the device), not host indices")
        all_ = active is None or active.count >= e._n or e.gravity == "direct"
        e._evaluate(None if all_ else active)


def _module_source(module) -> tuple[str, str]:
    """(label, CUDA text) of a physics module's kernels: a kernels/ file name or the text."""
    src = module.kernels
    if src.endswith(".cu") and "\n" not in src:
        return src, read_kernel(src)
    return f"{type(module).__module__}.{type(module).__name__}", src


class GPUEngine(Engine):
    name = "gpu"
    on_gpu = True
    extra_kernels = ()  # (label, CUDA source) pairs a subclass adds to the engine's module

    def __init__(self, params=None, gravity: str | None = None, device: int = 0):
        super().__init__(params, modules.gravity_for(params, "gpu", gravity))
        reason = probe.unavailable_reason(device)
        if reason:
            raise EngineError(f"the GPU engine cannot run here: {reason}; use --backend cpu")
        import pycuda.driver as cuda

        self._cuda = cuda
        self.ordinal = device
        self._dev, self.context = primary_context(device)
        self._device_name = self._dev.name()
        self.system = _Particles(self)
        self.integrator, self.boundary, self.collision = modules.create(self.params, "gpu",
                                                                        self.system)
        self._n = 0
        self._galaxy_on_device = False
        self._cur = 0  # which particle set is current
        self._time = 0.0
        self._epoch = 0
        self._slot = 0
        self._have_tree = False
        self._tree_fresh = False  # the cells are of the current particle order (refit allowed)
        self._refits = 0  # refits since the last rebuild
        self._acc_valid = False  # acc4 holds every particle's last acceleration (relative MAC)
        self._sorts = 0  # force evaluations so far (each may reorder the particles)
        self._radius_order = None  # (set, sorts) the device radii were gathered for
        self._has_radius = False
        self._separate = True  # load() separates overlapping spheres; not a restart
        self._step_phases = None  # phase ms summed over the force evaluations of a step
        self._step_pp = None  # (pp, pc) summed over the force evaluations of a step
        with self.activate():
            self.kernels = compile_kernels([_module_source(m) for m in
                                            (self.integrator, self.boundary, self.collision)
                                            if m.kernels] + list(self.extra_kernels))
            attr = cuda.device_attribute
            self._n_sm = self._dev.get_attribute(attr.MULTIPROCESSOR_COUNT)
            gmax = min(self.params.n_crit, GROUP_MAX)
            self.buf = Buffers(cuda, self._device_name, gmax)
            self.group_split = group_split(gmax)
            self.pp_leaf = PP_LEAF_MAX
            self._walk_threads = self.kernels.max_threads("walk")
            self._walk_blocks = self._blocks_per_sm("walk", self._walk_threads)
            self._events = [cuda.Event() for _ in range(8)]
            self._host_status = cuda.pagelocked_zeros(8, np.uint64)

    # -- context -----------------------------------------------------------------------------
    def activate(self):
        return pushed(self.context)

    def _blocks_per_sm(self, kernel: str, threads: int) -> int:
        attr = self._cuda.device_attribute
        get = self._dev.get_attribute
        warps = threads // 32
        regs = -(-self.kernels.regs(kernel) * 32 // 256) * 256 * warps
        by_regs = get(attr.MAX_REGISTERS_PER_MULTIPROCESSOR) // max(regs, 1)
        smem = self.kernels.static_smem(kernel) + 1024
        by_smem = get(attr.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) // smem
        by_threads = get(attr.MAX_THREADS_PER_MULTIPROCESSOR) // threads
        return max(1, min(by_regs, by_smem, by_threads, 32))

    # -- description -------------------------------------------------------------------------
    @property
    def device_name(self) -> str:
        return self._device_name

    @property
    def n(self) -> int:
        return self._n

    @property
    def time(self) -> float:
        return self._time

    def device_memory_bytes(self) -> int:
        """Device memory the engine holds (all buffers)."""
        return self.buf.total_bytes()

    def device_view(self) -> DeviceView:
        return DeviceView(self.context, self.ordinal, self.system.particles,
                          self._device_values)

    def _device_values(self, mode: str) -> int | None:
        """Per-particle colour values on the device (DeviceView.values): the galaxy of origin
        gathered into the current order; log10 of the tree density (model/density.py's
        estimate: the smallest cell with >= 32 particles, levels <= 16) from the last tree."""
        if mode not in ("galaxy", "density") or not self._n:
            return None
        if mode == "density" and not self._have_tree:
            return None  # direct gravity keeps no tree
        b, n = self.buf, self._n
        b._alloc("colour_values", 4 * n)
        out = b.ptr("colour_values")
        if mode == "galaxy":
            if not self._galaxy_on_device:
                b._alloc("galaxy_f", 4 * n)
                self._cuda.memcpy_htod(b.ptr("galaxy_f"), self._galaxy.astype(np.float32))
                self._galaxy_on_device = True
            self.kernels.launch("gather_by_id", (self._grid(), 1, 1), (256, 1, 1),
                                b.ptr("galaxy_f"), b.ptr(f"id{self._cur}"), n, out)
            return out
        for level in range(min(MAX_LEVEL, DENSITY_MAX_LEVEL) + 1):  # a warp per cell
            self.kernels.launch("cell_density", (self._grid(32 * n), 1, 1), (256, 1, 1), level,
                                b.ptr("lb"), DENSITY_N_MIN, b.ptr("begin"), b.ptr("count"),
                                b.ptr("cell_q1"), b.ptr("frame"), out)
        return out

    # -- state -------------------------------------------------------------------------------
    def load(self, state: ParticleState) -> None:
        n = state.n
        if not 1 <= n <= MAX_N:
            raise EngineError(f"the GPU engine needs 1 to {MAX_N:,} particles, got {n:,}")
        pos4 = np.empty((n, 4), np.float32)
        pos4[:, :3], pos4[:, 3] = state.pos, state.mass
        vel4 = np.empty((n, 4), np.float32)
        vel4[:, :3], vel4[:, 3] = state.vel, state.component
        self._component = state.component.copy()
        self._galaxy = state.galaxy.copy()
        self._galaxy_on_device = False
        self._radius = state.radius.copy()
        self._meta = dict(state.meta)
        with self.activate():
            self.buf.ensure(n, self._n_sm, self._walk_blocks, self._walk_threads)
            self._n, self._cur = n, 0
            self._tree_fresh = self._acc_valid = False
            pos, vel = self.buf.set_ptrs(0)
            self._cuda.memcpy_htod(pos, pos4)
            self._cuda.memcpy_htod(vel, vel4)
            self._cuda.memcpy_htod(self.buf.ptr("id0"), np.arange(n, dtype=np.uint32))
            self._time = self.system.time = float(state.time)
            self.steps_done = 0
            self._radius_order = None
            self._has_radius = bool((self._radius > 0).any())
            if self._has_radius:  # hard spheres: radii on the device, loaded order
                self.buf._alloc("radius0", 4 * n)
                self.buf._alloc("radius", 4 * n)
                self._cuda.memcpy_htod(self.buf.ptr("radius0"), self._radius.astype(np.float32))
            self.boundary.apply()
            if self._separate:
                self.collision.start()
            self.integrator.start()

    def load_exact(self, exact: ExactState) -> None:
        """The float32 state (float64 arrays of the CPU engine rounded), forces evaluated anew
        (the sort order is the device's own), then integrator.restore(); continues to
        round-off."""
        state = exact.state
        if exact.pos is not None:  # the exact arrays, rounded once to the device's float32
            state = ParticleState(exact.pos, exact.vel, state.mass, state.component,
                                  state.galaxy, state.time, dict(state.meta), state.radius)
        self._separate = False
        try:
            self.load(state)
        finally:
            self._separate = True
        self.steps_done = int(exact.steps)
        with self.activate():
            self.integrator.restore(exact.integrator_state(self.params.integrator))

    def state(self) -> ParticleState:
        with self.activate():
            self._sync()
            pos, vel = self.buf.set_ptrs(self._cur)
            p4 = self._download(pos, np.float32, 4 * self._n).reshape(-1, 4)
            v4 = self._download(vel, np.float32, 4 * self._n).reshape(-1, 4)
            ids = self._download(self.buf.ptr(f"id{self._cur}"), np.uint32, self._n)
        p, v = np.empty_like(p4), np.empty_like(v4)
        p[ids], v[ids] = p4, v4
        return ParticleState(p[:, :3], v[:, :3], p[:, 3], self._component.copy(),
                             self._galaxy.copy(), self._time, dict(self._meta),
                             radius=self._radius.copy())

    def sample_state(self, count: int) -> tuple[np.ndarray, ParticleState]:
        """Every k-th particle of the sorted order (along the Morton curve): strided copies of
        about `count` rows, not the whole state."""
        every = self._stride(count)
        with self.activate():
            self._sync()
            pos, vel = self.buf.set_ptrs(self._cur)
            p4 = self._download_rows(pos, np.float32, 4, *every)
            v4 = self._download_rows(vel, np.float32, 4, *every)
            ids = self._download_rows(self.buf.ptr(f"id{self._cur}"), np.uint32, 1, *every)[:, 0]
        ids = ids.astype(np.int64)
        return ids, ParticleState(p4[:, :3], v4[:, :3], p4[:, 3], self._component[ids],
                                  self._galaxy[ids], self._time, dict(self._meta),
                                  radius=self._radius[ids])

    def _stride(self, count: int) -> tuple[int, int]:
        """(k, rows): every k-th of the particles gives about `count` rows."""
        k = max(1, self._n // max(int(count), 1))
        return k, -(-self._n // k)

    def _download_rows(self, ptr: int, dtype, width: int, stride: int, rows: int) -> np.ndarray:
        """Rows 0, stride, 2 stride, ... (`rows` of them) of a (N, width) device array."""
        out = np.empty((rows, width), dtype)
        if rows:
            size = out.itemsize * width
            copy = self._cuda.Memcpy2D()
            copy.set_src_device(ptr)
            copy.src_pitch = size * stride
            copy.set_dst_host(out)
            copy.dst_pitch = copy.width_in_bytes = size
            copy.height = rows
            copy(aligned=True)
        return out

    # -- work --------------------------------------------------------------------------------
    def _on_force_params_changed(self) -> None:
        if self._n:
            with self.activate():
                self.integrator.forces_changed()

    def refresh_forces(self) -> None:
        """Evaluate the accelerations of the current positions again (no step)."""
        if not self._n:
            raise EngineError("no particles loaded: load a scene first")
        with self.activate():
            self._evaluate()

    def step(self, n: int = 1) -> None:
        if not self._n:
            raise EngineError("no particles loaded: load a scene before stepping")
        n = self._step_count(n)
        ev = self._events
        with self.activate():
            for _ in range(n):
                self._step_phases, self._step_pp = dict.fromkeys(PHASES, 0.0), [0, 0]
                ev[0].record()
                try:
                    advanced = self.integrator.step(self.params.dt)
                    self.system.time = self._time + advanced
                    self.boundary.apply()
                    self.collision.resolve()
                    self._wait(ev[6].record())
                except BaseException:
                    self.system.time = self._time
                    raise
                finally:
                    self._step_phases = self._step_pp = None
                t = self.stats.timings_ms
                forces = sum(t.get(k, 0.0) for k in PHASES if k != "integrate")
                # the collision module times itself (its search and resolve)
                collide = self.collision.timings_ms if self.params.collision != "none" else {}
                t.update(collide)
                t["integrate"] = ev[6].time_since(ev[0]) - forces - sum(collide.values())
                self.stats.collisions = self.collision.resolved
                self.stats.deferred = self.collision.deferred
                self._time += advanced
                self.steps_done += 1

    def accelerations(self) -> tuple[np.ndarray, np.ndarray]:
        with self.activate():
            self._sync()
            a4 = self._download(self.buf.ptr("acc"), np.float32, 4 * self._n).reshape(-1, 4)
            ids = self._download(self.buf.ptr(f"id{self._cur}"), np.uint32, self._n)
        out = np.empty_like(a4)
        out[ids] = a4
        return np.ascontiguousarray(out[:, :3]), np.ascontiguousarray(out[:, 3])

    def energies(self) -> Energies:
        with self.activate():
            sums = self.buf.ptr("sums")
            self._cuda.memset_d32(sums, 0, 4)
            pos, vel = self.buf.set_ptrs(self._cur)
            self.kernels.launch("energy_sums", (self._grid(), 1, 1), (256, 1, 1), pos, vel,
                                self.buf.ptr("acc"), self._n, sums)
            self._sync()
            out = self._download(sums, np.float64, 2)
        return Energies(kinetic=float(out[0]), potential=float(out[1]))

    def direct_energies(self) -> Energies:
        """Float32 pair terms summed in float64 (kernels/nbody_state.cu)."""
        kinetic = self.energies().kinetic
        with self.activate():
            sums = self.buf.ptr("sums")
            self._cuda.memset_d32(sums, 0, 4)
            pos, _ = self.buf.set_ptrs(self._cur)
            self.kernels.launch("direct_potential_energy", (-(-self._n // 256), 1, 1),
                                (256, 1, 1), pos, self._n, float(self.params.eps) ** 2, sums)
            self._sync()
            w = self._download(sums, np.float64, 1)[0]
        return Energies(kinetic=kinetic, potential=float(self.params.G * w))

    def centre_of_mass(self, mask: np.ndarray | Selection) -> np.ndarray:
        """On the device: each mask (a Selection's from the host's tags) is uploaded once while
        the same object is passed again (the last COM_MASKS kept), and 4 float64 sums come
        back per call."""
        cuda = self._cuda
        with self.activate():
            kept = self._com_kept()
            entry = next((e for e in kept if e[0] is mask), None)
            if entry is None:
                host = mask.mask(self._component, self._galaxy) if isinstance(mask, Selection) \
                    else mask
                if host.shape != (self._n,):
                    raise ValueError(f"mask must have one entry per particle ({self._n}), "
                                     f"got {host.shape}")
                if len(kept) >= COM_MASKS:
                    _, old, sums = kept.pop(0)
                    old.free()
                    sums.free()
                entry = (mask, cuda.to_device(np.ascontiguousarray(host, dtype=np.uint8)),
                         cuda.mem_alloc(32))
                kept.append(entry)
            _, on_device, sums = entry
            cuda.memset_d32(sums, 0, 8)
            pos, _ = self.buf.set_ptrs(self._cur)
            self.kernels.launch("masked_com", (self._grid(), 1, 1), (256, 1, 1), pos,
                                self.buf.ptr(f"id{self._cur}"), on_device, self._n, sums)
            self._sync()
            out = self._download(int(sums), np.float64, 4)
        if out[3] <= 0:  # massless selection: fall back to the plain mean
            return super().centre_of_mass(mask)
        return out[:3] / out[3]

    def _com_kept(self) -> list:
        if getattr(self, "_com", None) is None:
            self._com = []  # (the mask or Selection passed, its device copy, the sums)
        return self._com

    def _free_com(self) -> None:
        for _, on_device, sums in self._com_kept():
            on_device.free()
            sums.free()
        self._com = []

    def close(self) -> None:
        self._free_com()
        if getattr(self, "buf", None) is not None:
            with self.activate():
                self._sync()
                for module in (self.integrator, self.boundary, self.collision):
                    module.close()
                self.buf.free()
                self.kernels = None  # the compiled module unloads while its context is current
            self.buf = None
            self.context.detach()
            self._n = 0

    # -- tree overlay ----------------------------------------------------------------------
    def _particle_arrays(self) -> list[tuple[int, int]]:
        """(device pointer, bytes) of the current particle set: pos4, vel4, acc4, ids."""
        n = self._n
        pos, vel = self.buf.set_ptrs(self._cur)
        return [(pos, 16 * n), (vel, 16 * n), (self.buf.ptr("acc"), 16 * n),
                (self.buf.ptr(f"id{self._cur}"), 4 * n)]

    def checkpoint(self, reuse: Checkpoint | None = None) -> Checkpoint:
        """A device-to-device copy of the current particle set (52 bytes a particle), into
        `reuse`'s device memory where it is of this particle set (cudaMalloc and cudaFree
        stall the device: a full timeline's steady state allocates nothing)."""
        if not self._n:
            raise EngineError("no particles loaded: load a scene first")
        with self.activate():
            arrays = self._particle_arrays()
            nbytes = sum(b for _, b in arrays)
            mem = None
            if reuse is not None and reuse.on_device and reuse.data is not None:
                if reuse.data[1] == self._n and reuse.data[2] is self.context:
                    mem, reuse.data, reuse.release = reuse.data[0], None, None
                else:
                    reuse.free()
            try:
                if mem is None:
                    mem = self._cuda.mem_alloc(nbytes)
            except self._cuda.MemoryError:
                raise EngineError(f"no device memory for another checkpoint of "
                                  f"{nbytes / 1e6:.0f} MB") from None
            offset = 0
            for ptr, b in arrays:
                self._cuda.memcpy_dtod(int(mem) + offset, ptr, b)
                offset += b
            self._sync()
            states = self._module_states()  # the modules' own (the Hermite's float64 state)
        context = self.context

        def release():
            with pushed(context):
                mem.free()

        return Checkpoint(self._time, self.steps_done, self.params,
                          nbytes + self._states_nbytes(states), True,
                          (mem, self._n, context), states, release)

    def restore(self, checkpoint: Checkpoint) -> None:
        if checkpoint.data is None or checkpoint.data[1] != self._n:
            raise EngineError("this checkpoint is of another particle set or was freed")
        mem = checkpoint.data[0]
        with self.activate():
            offset = 0
            for ptr, b in self._particle_arrays():
                self._cuda.memcpy_dtod(ptr, int(mem) + offset, b)
                offset += b
            self._sync()
            self._time = self.system.time = checkpoint.time
            self._tree_fresh = False  # the checkpoint's order is not the tree's
            self._restore_modules(checkpoint)

    def sample_forces(self, targets: np.ndarray):
        """On the device (engines/gpu/inspect.py sample_forces): the direct sum in float32 pair
        terms and float64 sums, and the solver's accelerations of the targets alone."""
        from galaxyview.engines.gpu.inspect import sample_forces

        return None if self._no_gravity() else sample_forces(self, targets)

    def tree_boxes(self, level_lo: int, level_hi: int) -> np.ndarray:
        if not self._have_tree:
            return None
        lo, hi = max(0, int(level_lo)), min(MAX_LEVEL, int(level_hi))
        with self.activate():
            self._sync()
            lb = self._download(self.buf.ptr("lb"), np.int32, MAX_LEVEL + 3)
            c0, c1 = int(lb[lo]), int(lb[hi + 1]) if hi >= lo else int(lb[lo])
            if c1 <= c0:
                return np.zeros((0, 4), np.float32)
            self.buf._alloc("boxes", 16 * (c1 - c0))
            self.kernels.launch("cell_boxes", (self._grid(c1 - c0), 1, 1), (256, 1, 1), c0, c1,
                                self.buf.ptr("level"), self.buf.ptr("begin"),
                                self.buf.ptr("keys0"), self.buf.ptr("frame"),
                                self.buf.ptr("boxes"))
            return self._download(self.buf.ptr("boxes"), np.float32, 4 * (c1 - c0)).reshape(-1, 4)

    # -- force evaluation ---------------------------------------------------------------------
    def _evaluate(self, active: DeviceActive | None = None) -> None:
        """Accelerations of the current positions (no kicks), with the status checked: of all
        particles, or of `active` (on a refitted tree when _refit_ok says so)."""
        ev = self._events
        ev[1].record()
        refit = self._refit_ok(active)
        self._force(ev, active, refit)
        self._read_status()
        while self._check_status():  # grown arrays: the tree is built again
            self._force(None, active, False)
            self._read_status()
        self._refits = self._refits + 1 if refit else 0
        self._acc_valid = self._acc_valid or active is None
        t = self._force_times(ev)
        if self._step_phases is not None:  # in a step: the phases of all its evaluations
            for k, v in t.items():
                self._step_phases[k] += v
            t = dict(self._step_phases)
        self._set_stats(t)

    def _refit_ok(self, active: DeviceActive | None) -> bool:
        """Refit the last tree for this active subset (see REFIT_FRACTION)?"""
        return (active is not None and self._tree_fresh and self._refits < REFIT_MAX
                and active.count <= refit_fraction() * self._n)

    def _force_times(self, ev) -> dict:
        """Per-phase ms of the force evaluation between events 1 and 5."""
        t = dict.fromkeys(PHASES, 0.0)
        if self.gravity == "tree":
            t["keys_sort"] = ev[2].time_since(ev[1])
            t["build"] = ev[3].time_since(ev[2])
            t["multipoles"] = ev[4].time_since(ev[3])
        t["walk"] = ev[5].time_since(ev[4] if self.gravity == "tree" else ev[1])
        return t

    def _force(self, ev, active=None, refit=False) -> None:
        run_force(self, ev, active, refit)
        self._sorts += 1
        self._have_tree = self._tree_fresh = self.gravity == "tree"

    def _before_walk(self, ev) -> None:
        """Called by run_force between the multipoles and the walk (ev: None on a repeat
        after grown arrays); what a subclass queues there runs before the walk."""

    def _walk_later(self, ev) -> bool:
        """Called by run_force after _before_walk: True to leave the walk to the caller of
        _force (which then walks the tree itself, with more trees beside it)."""
        return False

    def _walk_launch_blocks(self) -> int:
        """Blocks of the walk's launch: all the device holds (a parallel rank holds some back
        for its LET export, which then joins the walk)."""
        return self.buf.walk_grid

    def _radius_ptr(self) -> int:
        """Device radii in the current order (gathered after each reorder); 0 without radii."""
        if not self._n or not self._has_radius:
            return 0
        b, key = self.buf, (self._cur, self._sorts)
        if self._radius_order != key:
            self.kernels.launch("gather_by_id", (self._grid(), 1, 1), (256, 1, 1),
                                b.ptr("radius0"), b.ptr(f"id{self._cur}"), self._n,
                                b.ptr("radius"))
            self._radius_order = key
        return b.ptr("radius")

    def _read_status(self) -> None:
        self._cuda.memcpy_dtoh_async(self._host_status, self.buf.ptr("status"))
        self._events[7].record()
        self._wait(self._events[7])

    def _check_status(self) -> bool:
        """Raise on a non-finite state or a walk stack overflow; True when the tree needs
        bigger arrays (then grown, and the force must be evaluated again)."""
        flags = int(self._host_status[ST_FLAGS])
        if flags & FLAG_NONFINITE:
            raise EngineError(
                f"the particle state became non-finite (NaN or inf) at t = {self._time:g}: "
                "reload the scene and use a smaller dt or a larger eps")
        if flags & FLAG_STACK:
            raise EngineError(
                f"the tree walk ran out of stack at theta = {self.params.theta:g}: "
                "use a larger theta")
        if flags & (FLAG_CELLS | FLAG_GROUPS):
            self.buf.grow_cells()
            return True
        return False

    def _set_stats(self, timings: dict) -> None:
        pp, pc = int(self._host_status[ST_PP]), int(self._host_status[ST_PC])
        if self.gravity == "direct":
            pp, pc = self._n * self._n, 0
        if self._step_pp is not None:  # in a step: the interactions of all its evaluations
            self._step_pp[0] += pp
            self._step_pp[1] += pc
            pp, pc = self._step_pp
        self.stats = StepStats(timings_ms=timings, pp=pp, pc=pc, n=self._n)

    # -- helpers -------------------------------------------------------------------------------
    def _grid(self, n: int | None = None) -> int:
        n = self._n if n is None else n
        return max(1, min(-(-n // 256), self._n_sm * 8))

    def next_slot(self) -> tuple[int, int]:
        """(tile counter pointer, epoch) for one look-back launch of this force evaluation."""
        ptr = self.buf.ptr("status") + 8 * (ST_TILE0 + self._slot)
        self._slot += 1
        return ptr, self.next_epoch()

    def next_epoch(self) -> int:
        """A new epoch for a look-back launch's tiles (scan_excl)."""
        self._epoch = self._epoch % (2**30 - 2) + 1
        return self._epoch

    def _wait(self, event) -> None:
        try:
            event.synchronize()
        except self._cuda.Error as exc:
            raise EngineError(
                f"a GPU kernel failed during the step ({exc}); the GPU context is unusable: "
                "restart galaxyview (GALAXYVIEW_GPU_SYNC=1 names the kernel) or use "
                "--backend cpu") from None

    def _sync(self) -> None:
        self._wait(self._events[7].record())

    def _download(self, ptr: int, dtype, count: int) -> np.ndarray:
        out = np.empty(count, dtype=dtype)
        if count:
            self._cuda.memcpy_dtoh(out, ptr)
        return out

