"""4th-order Hermite with block time steps, GPU engine (kernels/integrator_hermite.cu).

The same scheme as hermite_cpu.py, with its state in float64 on the device and its own all-pairs
force kernel for acc + jerk of the active block (Sapporo2's layout: i-blocks times j-slices).
The host keeps only the level counts (read back once a block step) to schedule the blocks
(integrators/blocks.py); the engine's float32 arrays get the synchronised state, with the
accelerations and potentials of all particles, at the end of each step.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.integrators import blocks
from galaxyview.engines.modules import Integrator

THREADS = 256
BLOCKS_PER_SM = 8  # the force kernel is sized to fill the device at 2048 threads an SM
PART = 7  # ax ay az jx jy jz pot
BATCH_MAX = 128  # block steps queued before the host looks at the schedule again
# the device schedule's words (kernels/integrator_hermite.cu SC_*)
(SC_T, SC_TNEXT, SC_KMIN, SC_NACT, SC_W, SC_IBLOCKS, SC_SLICES, SC_JSLICE, SC_STRIDE, SC_TEND,
 SC_BLOCKS, SC_ACTIVE, SC_SHARED, SC_EQUAL, SC_TARGET) = range(15)
SC_WORDS = 16


def launch_shape(n_act: int, n: int, sms: int) -> tuple[int, int, int, int]:
    """(W lanes per i-particle, i-blocks, j-slices, j per slice) for an active block of n_act:
    small blocks get more lanes and slices so that the device stays full."""
    w = 1
    while w < 32 and w * n_act < THREADS:
        w *= 2
    ni = THREADS // w
    iblocks = -(-n_act // ni)
    slices = max(1, min(-(-sms * BLOCKS_PER_SM // iblocks), -(-n // THREADS)))
    jslice = -(-n // slices)
    jslice = -(-jslice // THREADS) * THREADS  # whole tiles
    return w, iblocks, -(-n // jslice), jslice


class Hermite4(Integrator):
    kernels = "integrator_hermite.cu"
    gravity = "direct"
    uses_eta = True
    shared = False

    def start(self) -> None:
        import pycuda.driver as cuda

        s, p = self.system, self.system.params
        self._cuda, n = cuda, s.n
        self._alloc(n)
        d = self._d
        part = s.particles()
        s.launch("herm_init", part.pos4, part.vel4, n, d["x"], d["v"], d["tl"], d["pj"])
        self._forces_all(0, 0.0)
        self._launch_first(set_levels=True)
        self._dt, self._L = p.dt, p.block_levels
        self._count_levels()
        self._activity = blocks.Activity()
        self._store()

    def forces_changed(self) -> None:
        self._forces_all(0, 0.0)
        self._launch_first(set_levels=False)
        self._store()

    def time_steps(self):
        return self._activity.time_steps(self.counts[:self._L + 1])

    def save(self) -> dict:
        """float64 x, v, a, j and the levels in the loaded order (the Hermite never re-sorts
        the particles)."""
        cuda, d = self._cuda, self._d
        level = np.empty(self.system.n, np.int32)
        cuda.memcpy_dtoh(level, d["lev"])
        return {"pos": download(self, "x"), "vel": download(self, "v"),
                "acc": download(self, "a"), "jerk": download(self, "j"), "level": level,
                "dt": float(self._dt), "block_levels": int(self._L)}

    def restore(self, saved: dict) -> None:
        if not saved:  # start() has set everything up for this state
            return
        cuda, d = self._cuda, self._d
        cuda.memcpy_htod(d["a"], np.ascontiguousarray(saved["acc"], np.float64))
        cuda.memcpy_htod(d["j"], np.ascontiguousarray(saved["jerk"], np.float64))
        cuda.memcpy_htod(d["lev"], np.ascontiguousarray(saved["level"], np.int32))
        for name, key in (("x", "pos"), ("v", "vel")):
            if key in saved:  # the float64 state (a checkpoint; a snapshot of this engine)
                cuda.memcpy_htod(d[name], np.ascontiguousarray(saved[key], np.float64))
        self._dt, self._L = float(saved["dt"]), int(saved["block_levels"])
        self._count_levels()

    def step(self, dt: float) -> float:
        """Block steps queued in batches without waiting (the schedule is on the device); the
        host reads the schedule back once a batch to see whether the step has ended."""
        s, p = self.system, self.system.params
        L, d, n, sc = p.block_levels, self._d, s.n, self._sc
        if dt != self._dt or L != self._L:
            s.launch("herm_shift", n, blocks.level_shift(self._dt, dt), -1, L, d["lev"])
            self._count_levels()
        tick, eps2, G = dt / (1 << L), float(p.eps) ** 2, float(p.G)
        sc[:] = 0
        sc[[SC_TEND, SC_SHARED, SC_EQUAL, SC_TARGET]] = (1 << L, int(self.shared), -1,
                                                         self._target)
        self._cuda.memcpy_htod(d["sc"], sc)
        force_ms, batch, ev = 0.0, 4, self._ev
        while True:
            for b in range(batch):
                s.launch("herm_schedule", d["sc"], d["counts"], n, L, grid=1)
                s.launch("herm_predict", n, d["sc"], tick, d["x"], d["v"], d["a"], d["j"],
                         d["tl"], d["lev"], d["pj"], d["pl"], d["pv"], d["act"], d["nact"])
                ev[2 * b].record()
                self._launch_forces(eps2)
                ev[2 * b + 1].record()
                s.launch("herm_correct", d["sc"], d["act"], d["part"], G, tick, float(p.eta),
                         L, d["x"], d["v"], d["a"], d["j"], d["tl"], d["lev"],
                         d["counts"], d["nact"], grid=self._target)
            self._cuda.memcpy_dtoh_async(sc, d["sc"])
            ev[-1].record()
            ev[-1].synchronize()
            force_ms += sum(ev[2 * b + 1].time_since(ev[2 * b]) for b in range(batch))
            if sc[SC_NACT] == 0:
                break
            batch = min(2 * batch, BATCH_MAX)
        self._read_counts()
        if self.shared and np.count_nonzero(self.counts) > 1:  # the last block's new levels
            s.launch("herm_shift", n, 0, int(np.flatnonzero(self.counts)[-1]), L, d["lev"])
            self._count_levels()
        activity = blocks.Activity()
        activity.blocks, activity.active = int(sc[SC_BLOCKS]), int(sc[SC_ACTIVE])
        self._forces_all(1 << L, tick)
        self._store()
        self._dt, self._L, self._activity = dt, L, activity
        s.account({"walk": force_ms}, activity.active * n)
        return dt

    # -- launches ------------------------------------------------------------------------------
    def _alloc(self, n: int) -> None:
        self.close()
        cuda = self._cuda
        self._target = self.system.multiprocessors * BLOCKS_PER_SM
        part_cap = self._target * THREADS + n + THREADS  # slices x slots, any block size
        sizes = {"x": 24, "v": 24, "a": 24, "j": 24, "tl": 8, "lev": 4, "act": 4,
                 "pj": 16, "pl": 16, "pv": 16}
        self._d = {k: cuda.mem_alloc(max(1, n) * b) for k, b in sizes.items()}
        self._d["part"] = cuda.mem_alloc(8 * PART * part_cap)
        self._d["counts"] = cuda.mem_alloc(4 * 64)
        self._d["nact"] = cuda.mem_alloc(4)
        self._d["sc"] = cuda.mem_alloc(8 * SC_WORDS)
        cuda.memset_d32(self._d["nact"], 0, 1)
        self.counts = cuda.pagelocked_zeros(64, np.int32)
        self._sc = cuda.pagelocked_zeros(SC_WORDS, np.int64)
        self._ev = [cuda.Event() for _ in range(2 * BATCH_MAX + 1)]

    def _warps(self, n: int) -> int:
        """Blocks for a warp per active particle."""
        return max(1, min(-(-n * 32 // THREADS), self._target))

    def _set_block(self, t: int, n_act: int, into=None) -> None:
        """A block chosen by the host (all particles at t, or a benchmark's first n_act),
        written as the device schedule, or into another schedule buffer `into`."""
        n = self.system.n
        w, iblocks, slices, jslice = launch_shape(n_act, n, self.system.multiprocessors)
        stride = iblocks * (THREADS // w)
        sc = self._sc  # idle between engine steps
        sc[:] = 0
        sc[[SC_T, SC_TNEXT, SC_NACT, SC_W, SC_IBLOCKS, SC_SLICES, SC_JSLICE, SC_STRIDE,
            SC_EQUAL, SC_TARGET]] = (t, t, n_act, w, iblocks, slices, jslice, stride, -1,
                                     self._target)
        self._cuda.memcpy_htod(self._d["sc"] if into is None else into, sc)
        if into is None:
            self._shape = (slices, stride)

    def _launch_forces(self, eps2: float, sc=None) -> None:
        s, d = self.system, self._d
        s.launch("herm_forces", d["sc"] if sc is None else sc, d["act"], s.n, d["pj"], d["pl"],
                 d["pv"], eps2, d["part"], grid=self._target)

    def _forces_all(self, t: int, tick: float) -> None:
        """a, j and potentials of every particle at tick t (all must be at t: no prediction)."""
        s, d = self.system, self._d
        self._set_block(t, s.n)
        s.launch("herm_predict", s.n, d["sc"], tick, d["x"], d["v"], d["a"], d["j"], d["tl"],
                 d["lev"], d["pj"], d["pl"], d["pv"], d["act"], d["nact"])
        self._launch_forces(float(s.params.eps) ** 2)

    def _launch_first(self, set_levels: bool, n_act: int | None = None) -> None:
        """a and j (and levels) from the last force launch, of its n_act (all) slots."""
        s, p, d = self.system, self.system.params, self._d
        slices, stride = self._shape
        m = s.n if n_act is None else n_act
        s.launch("herm_first", m, d["act"], slices, stride, d["part"], float(p.G),
                 d["a"], d["j"], int(set_levels), float(p.dt),
                 float(p.eta), p.block_levels, d["lev"], d["nact"], grid=self._warps(m))

    def _store(self) -> None:
        """The synchronised state and the forces of _forces_all into the engine's arrays."""
        s, p, d = self.system, self.system.params, self._d
        slices, stride = self._shape
        part = s.particles()
        s.launch("herm_store", s.n, d["act"], slices, stride, d["part"], float(p.G),
                 d["pj"], d["x"], d["v"], d["tl"], part.pos4, part.vel4,
                 part.acc4, d["nact"], grid=self._warps(s.n))

    def _count_levels(self) -> None:
        d = self._d
        self._cuda.memset_d32(d["counts"], 0, 64)
        self.system.launch("herm_count", self.system.n, d["lev"], d["counts"])
        self._read_counts()

    def _read_counts(self) -> None:
        self._cuda.memcpy_dtoh_async(self.counts, self._d["counts"])
        self._ev[-1].record()
        self._ev[-1].synchronize()

    def close(self) -> None:
        for buf in getattr(self, "_d", {}).values():
            buf.free()
        self._d = {}


class Hermite4Shared(Hermite4):
    """Hermite with one shared adaptive step (the finest any particle needs)."""

    shared = True


def download(integrator: Hermite4, name: str) -> np.ndarray:
    """A float64 (N, 3) state array of the GPU Hermite ("x", "v", "a", "j"), loaded order."""
    out = np.empty((integrator.system.n, 3))
    integrator._cuda.memcpy_dtoh(out, integrator._d[name])
    return out


def force_rates(engine, sizes, repeats: int = 20) -> list[tuple[int, float]]:
    """(active particles, ms per launch) of the acc + jerk force kernel of a loaded GPU engine
    running hermite4, for active blocks of each size in `sizes` (the first particles). Timed
    with CUDA events around `repeats` back-to-back launches queued behind a long launch, so
    that the figure is the kernel's own time, not the host's launch rate."""
    integ = engine.integrator
    cuda, d, n = integ._cuda, integ._d, engine.n
    eps2 = float(engine.params.eps) ** 2
    busy = max(1, min(n, int(4e9 // n)))  # about 5 ms of work ahead of the timed launches
    out = []
    with engine.activate():
        cuda.memcpy_htod(d["act"], np.arange(n, dtype=np.int32))
        busy_sc = cuda.mem_alloc(8 * SC_WORDS)
        integ._set_block(0, busy, into=busy_sc)
        for m in sizes:
            m = min(int(m), n)
            integ._set_block(0, m)
            integ._launch_forces(eps2)  # warm-up
            reps = repeats if m * n < 1e10 else 3
            integ._launch_forces(eps2, busy_sc)
            integ._ev[0].record()
            for _ in range(reps):
                integ._launch_forces(eps2)
            integ._ev[1].record()
            integ._ev[1].synchronize()
            out.append((m, integ._ev[1].time_since(integ._ev[0]) / reps))
        busy_sc.free()
    return out
