"""Symplectic epicycle integrator (SEI, Rein & Tremaine 2011) for the shearing sheet, CPU.

Drift-kick-drift: each drift moves particles exactly along Hill's epicycles (the tidal and
Coriolis forces of the frame rotating at Omega, and the vertical oscillation at Omega) for half
a step; the kick adds the self-gravity of the particles and their ghost boxes for a full step.
A particle alone moves on its epicycle to round-off for any step.
"""
from __future__ import annotations

import math

import numpy as np

from galaxyview.engines.modules import Integrator
from galaxyview.errors import EngineError


def sheet_of(system):
    """The params' Sheet; EngineError when the scene defines none."""
    sheet = system.params.sheet
    if sheet is None:
        raise EngineError("the shearing-sheet modules run on a ring scene (model type "
                          "\"ring\", whose sheet gives Omega and the box); see docs/rings.md")
    return sheet


def epicycle_drift(pos: np.ndarray, vel: np.ndarray, omega: float, h: float) -> None:
    """Move pos, vel (N, 3) in place along the exact solution of Hill's equations for time h.

    Conserved: the guiding centre's x_g = (2 v_y + 4 Omega x) / Omega and
    b = Omega y - 2 v_x; the epicycle vector (Omega x - a, (Omega y - b) / 2) turns by Omega h
    while the guiding centre slides along y by -3/2 Omega x_g h. Rotations are three shears
    (Rein & Tremaine 2011), exact in round-off in that they keep the area."""
    x, y, z = pos[:, 0], pos[:, 1], pos[:, 2]
    vx, vy, vz = vel[:, 0], vel[:, 1], vel[:, 2]
    sin_, tan_ = math.sin(-omega * h), math.tan(-omega * h / 2)
    # vertical: (Omega z, v_z) turns by Omega h
    zx, zy = z * omega, vz.copy()
    zx -= tan_ * zy
    zy += sin_ * zx
    zx -= tan_ * zy
    a = 2.0 * vy + 4.0 * omega * x  # Omega x_g
    b = omega * y - 2.0 * vx
    ys = 0.5 * (omega * y - b)
    xs = omega * x - a
    xs -= tan_ * ys
    ys += sin_ * xs
    xs -= tan_ * ys
    pos[:, 0] = (xs + a) / omega
    pos[:, 1] = (2.0 * ys + b) / omega - 1.5 * a * h
    pos[:, 2] = zx / omega
    vel[:, 0] = ys
    vel[:, 1] = -2.0 * xs - 1.5 * a
    vel[:, 2] = zy


class SheetGravity(Integrator):
    """What the SEI of both engines shares: the self-gravity (with ghost boxes) at the start,
    after a parameter change and at mid-step, or no accelerations without it."""

    def start(self) -> None:
        self._gravity()

    forces_changed = start

    def _gravity(self) -> None:
        if sheet_of(self.system).self_gravity:
            self.system.forces()
        else:
            self._no_gravity()

    def _no_gravity(self) -> None:
        """Accelerations and potentials 0 (what energies() and the colours read)."""
        raise NotImplementedError


class SEI(SheetGravity):
    """drift h/2 (epicycles); a = F(x) (self-gravity with ghost boxes); v += a dt; drift h/2."""

    def _no_gravity(self) -> None:
        s = self.system
        s.acc, s.pot = np.zeros_like(s.pos), np.zeros(len(s.pos))

    def step(self, dt: float) -> float:
        s, omega = self.system, sheet_of(self.system).omega
        pos, vel = s.pos.copy(), s.vel.copy()
        epicycle_drift(pos, vel, omega, 0.5 * dt)
        s.pos, s.vel = pos, vel
        t0 = s.time
        s.time = t0 + 0.5 * dt
        self._gravity()
        s.vel += dt * s.acc
        epicycle_drift(s.pos, s.vel, omega, 0.5 * dt)
        s.time = t0 + dt
        return dt
