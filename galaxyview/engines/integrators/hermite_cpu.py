"""4th-order Hermite predictor-corrector with block time steps, CPU engine (float64, numpy).

Makino & Aarseth (1992): predict all particles to the block time with a and its time
derivative j (the jerk), evaluate a and j of the active block at the predicted state, correct
the block (Hut, Makino & McMillan 1995 form), and give each corrected particle a new level from
Aarseth's criterion dt = sqrt(eta (|a||a2| + |j|^2) / (|j||a3| + |a2|^2)). Blocks as in
integrators/blocks.py; every engine step ends with all particles synchronised.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.integrators import blocks
from galaxyview.engines.modules import Integrator
from galaxyview.errors import EngineError


def _norm(v: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->i", v, v))


def aarseth_step(a1, j1, a2, a3, eta: float) -> np.ndarray:
    """Aarseth's time-step criterion from a, j, and the 2nd and 3rd derivatives of a."""
    na, nj, n2, n3 = _norm(a1), _norm(j1), _norm(a2), _norm(a3)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(eta * (na * n2 + nj * nj) / (nj * n3 + n2 * n2))


def correct(x0, v0, a0, j0, a1, j1, h):
    """Corrected x1, v1 and the 2nd and 3rd derivatives of a at the end of a step of size h
    (h: (M, 1))."""
    v1 = v0 + 0.5 * h * (a0 + a1) + h * h / 12.0 * (j0 - j1)
    x1 = x0 + 0.5 * h * (v0 + v1) + h * h / 12.0 * (a0 - a1)
    snap0 = (-6.0 * (a0 - a1) - h * (4.0 * j0 + 2.0 * j1)) / (h * h)
    crackle = (12.0 * (a0 - a1) + 6.0 * h * (j0 + j1)) / (h * h * h)
    return x1, v1, snap0 + h * crackle, crackle


class Hermite4(Integrator):
    """Block time steps; `shared = True` keeps every particle on the finest level in use (one
    shared, adaptive step) for comparison."""

    gravity = "direct"
    uses_eta = True
    shared = False

    def start(self) -> None:
        s, p = self.system, self.system.params
        s.forces(jerk=True)
        self.acc, self.jerk = s.acc.copy(), s.jerk.copy()
        # the initial step: eta_s |a| / |j| with eta_s = eta / 2 (Makino & Aarseth 1992)
        with np.errstate(divide="ignore", invalid="ignore"):
            dt0 = 0.5 * p.eta * _norm(self.acc) / _norm(self.jerk)
        self.level = blocks.initial_levels(dt0, p.dt, p.block_levels)
        if self.shared:
            self.level[:] = self.level.max()
        self._dt, self._L = p.dt, p.block_levels
        self._activity = blocks.Activity()

    def forces_changed(self) -> None:
        s = self.system
        s.forces(jerk=True)
        self.acc, self.jerk = s.acc.copy(), s.jerk.copy()

    def time_steps(self):
        return self._activity.time_steps(np.bincount(self.level, minlength=self._L + 1))

    def save(self) -> dict:
        return {"acc": self.acc.copy(), "jerk": self.jerk.copy(), "level": self.level.copy(),
                "dt": float(self._dt), "block_levels": int(self._L)}

    def restore(self, saved: dict) -> None:
        if not saved:  # another scheme's snapshot: begin afresh from this state
            self.start()
            return
        self.acc = np.array(saved["acc"], np.float64)
        self.jerk = np.array(saved["jerk"], np.float64)
        self.level = np.array(saved["level"], np.int32)
        self._dt, self._L = float(saved["dt"]), int(saved["block_levels"])
        self._activity = blocks.Activity()

    def step(self, dt: float) -> float:
        s, p = self.system, self.system.params
        L = p.block_levels
        level = np.minimum(self.level, L)
        if dt != self._dt:
            level = blocks.rescale_levels(level, self._dt, dt, L)
        x0, v0, a0, j0 = s.pos.copy(), s.vel.copy(), self.acc.copy(), self.jerk.copy()
        compiled = s.compiled("hermite_block_steps")
        if compiled is not None:  # the same loop with no Python between block steps
            level = level.astype(np.int32)
            n_blocks, n_active, finite = compiled(x0, v0, a0, j0, level, s.mass, p.eps, p.G,
                                                  p.eta, dt, L, self.shared)
            if not finite:
                raise EngineError(f"a block step's forces became non-finite; reduce dt (now "
                                  f"{dt:g}) or eta (now {p.eta:g}), or increase eps (now "
                                  f"{p.eps:g})")
            activity = blocks.Activity()
            activity.blocks, activity.active = n_blocks, n_active
            return self._finish(x0, v0, a0, j0, level, dt, L, activity)
        t_i = np.zeros(len(level), np.int64)
        tick = dt / (1 << L)
        activity = blocks.Activity()
        t = 0
        while t < 1 << L:
            t_next, k = blocks.next_block(t, np.bincount(level, minlength=L + 1), L)
            act = np.flatnonzero(level >= k)
            tau = ((t_next - t_i) * tick)[:, None]
            s.pos = x0 + tau * (v0 + tau * (0.5 * a0 + tau / 6.0 * j0))
            s.vel = v0 + tau * (a0 + 0.5 * tau * j0)
            s.forces(act, jerk=True)
            a1, j1, h = s.acc[act], s.jerk[act], tau[act]
            x1, v1, a2, a3 = correct(x0[act], v0[act], a0[act], j0[act], a1, j1, h)
            x0[act], v0[act], a0[act], j0[act] = x1, v1, a1, j1
            crit = aarseth_step(a1, j1, a2, a3, p.eta)
            level[act] = blocks.new_levels(level[act], crit, h[:, 0], t_next, L)
            if self.shared:
                level[:] = level.max()
            t_i[act] = t_next
            activity.add(len(act))
            t = t_next
        return self._finish(x0, v0, a0, j0, level, dt, L, activity)

    def _finish(self, x0, v0, a0, j0, level, dt, L, activity) -> float:
        s = self.system
        s.pos, s.vel = x0, v0
        s.forces()  # the accelerations and potentials of the synchronised state, for output
        self.acc, self.jerk, self.level = a0, j0, level
        self._dt, self._L, self._activity = dt, L, activity
        return dt


class Hermite4Shared(Hermite4):
    """Hermite with one shared adaptive step (the finest any particle needs)."""

    shared = True
