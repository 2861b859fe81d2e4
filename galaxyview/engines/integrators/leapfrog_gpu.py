"""Kick-drift-kick leapfrog with a shared time step, GPU engine (kernels/integrator_leapfrog.cu)."""
from __future__ import annotations

from galaxyview.engines.modules import Integrator


class Leapfrog(Integrator):
    kernels = "integrator_leapfrog.cu"

    def step(self, dt: float) -> float:
        s, h = self.system, 0.5 * dt
        p = s.particles()
        s.launch("kick_drift", p.pos4, p.vel4, p.acc4, p.n, h, dt)
        s.forces()
        p = s.particles()  # the force evaluation sorted the particles into the other set
        s.launch("advance", p.vel4, p.acc4, p.n, h)  # the kick
        return dt
