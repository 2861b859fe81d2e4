"""Kick-drift-kick leapfrog with individual block time steps (hierarchical), CPU engine.

Every particle steps with dt_i = dt / 2^k (integrators/blocks.py: levels, integer ticks), k
from GADGET-2's criterion dt_i <= sqrt(2 eta eps / |a_i|). As in GADGET-2: each particle's step
opens and closes with a half kick of its own size; between them all particles drift together
from one block time to the next, and at each block time only the active particles (those whose
step ends there) get new forces, close their step, take a new level and open the next. The
engine step of size dt ends with all particles synchronised (every level is active there); its
last closing kicks and the next step's opening kicks make one full kick, so with one level
(block_levels = 0) this is the shared-step leapfrog, operation for operation.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.integrators import blocks
from galaxyview.engines.modules import Integrator
from galaxyview.errors import EngineError


def leapfrog_steps(acc: np.ndarray, eps: float, eta: float) -> np.ndarray:
    """GADGET-2's time-step criterion sqrt(2 eta eps / |a|) (inf where a = 0)."""
    a = np.sqrt(np.einsum("ij,ij->i", acc, acc))
    with np.errstate(divide="ignore"):
        return np.sqrt(2.0 * eta * eps / a)


def check_softening(params) -> None:
    if params.eps <= 0:
        raise EngineError("the hierarchical leapfrog's time-step criterion sqrt(2 eta eps/|a|) "
                          "needs a softening length: set eps > 0")


class HierarchicalLeapfrog(Integrator):
    uses_eta = True

    def start(self) -> None:
        s, p = self.system, self.system.params
        check_softening(p)
        s.forces()
        self._set_levels()

    def _set_levels(self) -> None:
        s, p = self.system, self.system.params
        self.level = blocks.initial_levels(leapfrog_steps(s.acc, p.eps, p.eta), p.dt,
                                           p.block_levels)
        self._dt, self._L = p.dt, p.block_levels
        self._activity = blocks.Activity()

    def time_steps(self):
        return self._activity.time_steps(np.bincount(self.level, minlength=self._L + 1))

    def save(self) -> dict:
        return {"level": self.level.copy(), "dt": float(self._dt),
                "block_levels": int(self._L)}

    def restore(self, saved: dict) -> None:
        if not saved:  # another scheme's snapshot: levels from the accelerations
            self._set_levels()
            return
        self.level = np.array(saved["level"], np.int32)
        self._dt, self._L = float(saved["dt"]), int(saved["block_levels"])
        self._activity = blocks.Activity()

    def step(self, dt: float) -> float:
        s, p = self.system, self.system.params
        check_softening(p)
        L, end = p.block_levels, 1 << p.block_levels
        level = np.minimum(self.level, L)
        if dt != self._dt:
            level = blocks.rescale_levels(level, self._dt, dt, L)
        half = 0.5 * dt / np.exp2(level)
        s.vel = s.vel + half[:, None] * s.acc  # every particle opens its step at t = 0
        activity, t = blocks.Activity(), 0
        while t < end:
            t_next, k = blocks.next_block(t, np.bincount(level, minlength=L + 1), L)
            s.pos = s.pos + (dt * ((t_next - t) / end)) * s.vel
            t = t_next
            if k == 0:  # every particle is due
                s.forces()
                s.vel += half[:, None] * s.acc
                act = slice(None)
            else:
                act = np.flatnonzero(level >= k)
                s.forces(act)
                s.vel[act] += half[act, None] * s.acc[act]
            crit = leapfrog_steps(s.acc[act], p.eps, p.eta)
            level[act] = blocks.new_levels(level[act], crit, dt / np.exp2(level[act]), t, L)
            half[act] = 0.5 * dt / np.exp2(level[act])
            activity.add(len(level) if k == 0 else len(act))
            if t < end:  # the next engine step opens every particle's step
                s.vel[act] += half[act, None] * s.acc[act]
        self.level, self._dt, self._L, self._activity = level, dt, L, activity
        return dt
