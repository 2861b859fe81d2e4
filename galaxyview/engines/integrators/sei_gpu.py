"""Symplectic epicycle integrator (SEI) for the shearing sheet, GPU engine
(kernels/integrator_sei.cu; the scheme is explained in sei_cpu.py)."""
from __future__ import annotations

import math

from galaxyview.engines.integrators.sei_cpu import SheetGravity, sheet_of


class SEI(SheetGravity):
    kernels = "integrator_sei.cu"

    def _no_gravity(self) -> None:
        p = self.system.particles()
        self.system.launch("sei_zero", p.acc4, p.n)

    def _drift(self, omega: float, h: float) -> None:
        p = self.system.particles()
        self.system.launch("sei_drift", p.pos4, p.vel4, p.n, omega, h, math.sin(-omega * h),
                           math.tan(-omega * h / 2))

    def step(self, dt: float) -> float:
        s, omega = self.system, sheet_of(self.system).omega
        t0 = s.time
        self._drift(omega, 0.5 * dt)
        s.time = t0 + 0.5 * dt
        self._gravity()
        p = s.particles()  # the force evaluation sorted the particles into the other set
        if sheet_of(s).self_gravity:
            s.launch("advance", p.vel4, p.acc4, p.n, dt)  # the kick
        self._drift(omega, 0.5 * dt)
        s.time = t0 + dt
        return dt
