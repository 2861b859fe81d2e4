"""The CPU engine: numpy Barnes-Hut (or direct summation) plus kick-drift-kick leapfrog.

Positions and velocities are integrated in float64; the tree is built from float32 positions
(the shared layout). It is the reference for the GPU engine and the fallback without a GPU.
"""
from __future__ import annotations

from time import perf_counter

import numpy as np

from galaxyview.engines.base import PHASES, Energies, Engine, StepStats
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.groups import make_groups
from galaxyview.engines.cpu.multipoles import compute_multipoles
from galaxyview.engines.cpu.tree import Tree, build_cells, sort_particles
from galaxyview.engines.cpu.forces import tree_forces
from galaxyview.errors import EngineError
from galaxyview.model import diagnostics
from galaxyview.model.state import ParticleState

_F32_MAX = float(np.finfo(np.float32).max)


class CPUEngine(Engine):
    """Engine on the CPU; `tree` is the last octree built (None with direct summation)."""

    name = "cpu"

    def __init__(self, params=None, gravity: str = "tree"):
        super().__init__(params, gravity)
        self.tree: Tree | None = None
        self._loaded: ParticleState | None = None  # tags and meta of the loaded state
        self._pos = self._vel = self._acc = self._pot = self._mass = None
        self._time = 0.0

    @property
    def device_name(self) -> str:
        return "CPU (numpy)"

    # -- state -------------------------------------------------------------------------------
    def load(self, state: ParticleState) -> None:
        if state.n == 0:
            raise EngineError("the state has no particles; load a scene with at least one")
        state.validate()
        self._loaded = state.copy()
        self._pos = state.pos.astype(np.float64)
        self._vel = state.vel.astype(np.float64)
        self._mass = state.mass.astype(np.float64)
        self._time = float(state.time)
        self.steps_done = 0
        timings = dict.fromkeys(PHASES, 0.0)
        acc, pot = self._forces(self._pos, timings)
        if not (np.isfinite(acc).all() and np.isfinite(pot).all()):
            raise EngineError(
                "the loaded state gives non-finite forces (particles at the same position "
                "without softening?); set eps > 0 or remove the coincident particles")
        self._acc, self._pot = acc, pot

    def state(self) -> ParticleState:
        s = self._need_state()
        return ParticleState(self._pos, self._vel, s.mass, s.component, s.galaxy,
                             self._time, dict(s.meta))

    @property
    def n(self) -> int:
        return 0 if self._mass is None else len(self._mass)

    @property
    def time(self) -> float:
        return self._time

    # -- work --------------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        self._need_state()
        if int(n) != n or n < 0:
            raise EngineError(f"step(n) needs a whole number of steps >= 0, got {n!r}")
        for _ in range(int(n)):
            self._step()

    def _step(self) -> None:
        dt = self.params.dt
        timings = dict.fromkeys(PHASES, 0.0)
        t0 = perf_counter()
        vel = self._vel + (0.5 * dt) * self._acc
        pos = self._pos + dt * vel
        timings["integrate"] = perf_counter() - t0
        self._check(pos, "positions")
        acc, pot = self._forces(pos, timings)
        self._check(acc, "accelerations")
        t0 = perf_counter()
        vel += (0.5 * dt) * acc
        timings["integrate"] += perf_counter() - t0
        self._check(vel, "velocities")
        self._pos, self._vel, self._acc, self._pot = pos, vel, acc, pot
        self._time += dt
        self.steps_done += 1
        self.stats.timings_ms["integrate"] = 1e3 * timings["integrate"]

    def _check(self, a: np.ndarray, what: str) -> None:
        """EngineError when a step made `a` non-finite (or beyond float32); the state stays."""
        if np.isfinite(a).all() and (what != "positions" or np.abs(a).max() < _F32_MAX):
            return
        kind = "NaN" if np.isnan(a).any() else "infinite"
        p = self.params
        raise EngineError(
            f"step {self.steps_done + 1}: {what} became {kind}; reduce dt (now {p.dt:g}) or "
            f"increase eps (now {p.eps:g}). The state is kept at t = {self._time:g}.")

    def _forces(self, pos: np.ndarray, timings: dict):
        """Accelerations and potentials at pos (in the loaded order); fills self.stats."""
        p, n = self.params, len(pos)
        if self.gravity == "direct":
            t0 = perf_counter()
            acc, pot = direct_forces(pos, self._mass, p.eps, p.G)
            timings["walk"] = perf_counter() - t0
            pp, pc = n * n, 0
        else:
            t0 = perf_counter()
            sorted_ = sort_particles(pos.astype(np.float32), self._mass)
            t1 = perf_counter()
            tree = build_cells(sorted_, p.n_leaf)
            make_groups(tree, p.n_crit)
            t2 = perf_counter()
            compute_multipoles(tree)
            t3 = perf_counter()
            acc_s, pot_s, pp, pc = tree_forces(tree, p.theta, p.eps, p.G)
            acc, pot = np.empty_like(acc_s), np.empty_like(pot_s)
            acc[tree.order], pot[tree.order] = acc_s, pot_s
            t4 = perf_counter()
            timings.update(keys_sort=t1 - t0, build=t2 - t1, multipoles=t3 - t2, walk=t4 - t3)
            self.tree = tree
        self.stats = StepStats({k: 1e3 * v for k, v in timings.items()}, pp, pc, n)
        return acc, pot

    def _on_force_params_changed(self) -> None:
        if self._pos is not None:
            self._acc, self._pot = self._forces(self._pos, dict.fromkeys(PHASES, 0.0))

    def accelerations(self) -> tuple[np.ndarray, np.ndarray]:
        self._need_state()
        return self._acc.copy(), self._pot.copy()

    def energies(self) -> Energies:
        self._need_state()
        return Energies(diagnostics.kinetic_energy(self._vel, self._mass),
                        diagnostics.potential_energy(self._mass, self._pot))

    def close(self) -> None:
        self.tree = self._loaded = None
        self._pos = self._vel = self._acc = self._pot = self._mass = None

    def _need_state(self) -> ParticleState:
        if self._loaded is None:
            raise EngineError("no particles loaded: call load(state) first")
        return self._loaded
