"""Kick-drift-kick leapfrog with a shared time step, CPU engine (float64)."""
from __future__ import annotations

from galaxyview.engines.modules import Integrator


class Leapfrog(Integrator):
    """v += a dt/2; x += v dt; a = F(x); v += a dt/2 (the accelerations kept from the last
    step are the first kick's)."""

    def step(self, dt: float) -> float:
        s, h = self.system, 0.5 * dt
        vel = s.vel + h * s.acc
        s.pos = s.pos + dt * vel
        s.vel = vel
        s.forces()
        vel += h * s.acc
        return dt
