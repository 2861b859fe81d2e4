"""Kick-drift-kick leapfrog with a shared time step, CPU engine (float64)."""
from __future__ import annotations

from galaxyview.engines.modules import Integrator


def kick_drift(pos, vel, acc, dt: float):
    """(pos, vel) after the first kick and the drift: v + a dt/2, then x + v dt (new arrays;
    also where the parallel ranks' migration sends the particles)."""
    vel = vel + (0.5 * dt) * acc
    return pos + dt * vel, vel


class Leapfrog(Integrator):
    """v += a dt/2; x += v dt; a = F(x); v += a dt/2 (the accelerations kept from the last
    step are the first kick's)."""

    def step(self, dt: float) -> float:
        s = self.system
        s.pos, vel = kick_drift(s.pos, s.vel, s.acc, dt)
        s.vel = vel
        s.forces()
        vel += (0.5 * dt) * s.acc
        return dt
