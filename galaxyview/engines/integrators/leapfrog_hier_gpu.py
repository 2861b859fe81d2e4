"""Kick-drift-kick leapfrog with individual block time steps, GPU engine
(kernels/integrator_leapfrog_hier.cu): the scheme of leapfrog_hier_cpu.py.

The levels live on the device, indexed by particle id; the host keeps their histogram (read
back after each block step: the next block time and its active levels follow from it, and the
count of active particles sizes the force evaluation). At each block time all particles drift,
the engine evaluates the forces of the active ones only (their own groups walk a refitted or
rebuilt tree: engines/gpu/phases.py), and one kernel closes, re-levels and reopens them.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.integrators import blocks
from galaxyview.engines.integrators.leapfrog_hier_cpu import check_softening
from galaxyview.engines.modules import Integrator
from galaxyview.engines.system import DeviceActive


class HierarchicalLeapfrog(Integrator):
    kernels = "integrator_leapfrog_hier.cu"
    uses_eta = True

    def start(self) -> None:
        import pycuda.driver as cuda

        s, p = self.system, self.system.params
        check_softening(p)
        self._cuda = cuda
        if getattr(self, "_cap", 0) < s.n:  # first start, or a larger state loaded
            self.close()
            self._cap = s.n
            self._level = cuda.mem_alloc(4 * max(1, s.n))
            self._counts = cuda.mem_alloc(4 * 64)
            self.counts = cuda.pagelocked_zeros(64, np.int32)
            self._done = cuda.Event()
        s.forces()
        self._set_levels()

    def _set_levels(self) -> None:
        s, p = self.system, self.system.params
        part = s.particles()
        self._cuda.memset_d32(self._counts, 0, 64)
        s.launch("hl_init", part.acc4, part.ids, s.n, float(p.eps), float(p.eta), float(p.dt),
                 p.block_levels, self._level, self._counts)
        self._dt, self._L = p.dt, p.block_levels
        self._activity = blocks.Activity()
        self._read_counts()

    def _read_counts(self) -> None:
        self._cuda.memcpy_dtoh_async(self.counts, self._counts)
        self._done.record()
        self._done.synchronize()

    def time_steps(self):
        return self._activity.time_steps(self.counts[:self._L + 1])

    def save(self) -> dict:
        level = np.empty(self.system.n, np.int32)  # by particle id: the loaded order
        self._cuda.memcpy_dtoh(level, self._level)
        return {"level": level, "dt": float(self._dt), "block_levels": int(self._L)}

    def restore(self, saved: dict) -> None:
        if not saved:  # another scheme's snapshot: levels from the accelerations
            self._set_levels()
            return
        self._cuda.memcpy_htod(self._level, np.ascontiguousarray(saved["level"], np.int32))
        self._dt, self._L = float(saved["dt"]), int(saved["block_levels"])
        self._shift(0, self._L)
        self._activity = blocks.Activity()

    def _shift(self, shift: int, L: int) -> None:
        """Levels moved by `shift` and clipped to 0..L, and counted again."""
        self._cuda.memset_d32(self._counts, 0, 64)
        self.system.launch("hl_shift", self.system.n, shift, L, self._level, self._counts)
        self._read_counts()

    def step(self, dt: float) -> float:
        s, p = self.system, self.system.params
        check_softening(p)
        L, end, n = p.block_levels, 1 << p.block_levels, s.n
        if dt != self._dt or L != self._L:
            self._shift(blocks.level_shift(self._dt, dt), L)
        half, eps, eta = 0.5 * dt, float(p.eps), float(p.eta)
        part = s.particles()
        s.launch("hl_open", part.vel4, part.acc4, part.ids, self._level, n, half)
        activity, t = blocks.Activity(), 0
        while t < end:
            t_next, k = blocks.next_block(t, self.counts[:L + 1], L)
            s.launch("advance", part.pos4, part.vel4, n, dt * ((t_next - t) / end))  # drift
            t = t_next
            n_act = n if k == 0 else int(self.counts[k:L + 1].sum())
            s.forces(None if k == 0 else DeviceActive(self._level, k, n_act))
            part = s.particles()  # the evaluation may have sorted the particles
            s.launch("hl_close", part.vel4, part.acc4, part.ids, self._level, n, k, half, t, L,
                     float(dt), eps, eta, int(t < end), self._counts)
            self._read_counts()
            activity.add(n_act)
        self._dt, self._L, self._activity = dt, L, activity
        return dt

    def close(self) -> None:
        for name in ("_level", "_counts"):
            buf = getattr(self, name, None)
            if buf is not None:
                buf.free()
            setattr(self, name, None)
