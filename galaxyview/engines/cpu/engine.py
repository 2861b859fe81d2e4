"""The CPU engine: numpy Barnes-Hut (or direct summation) plus the physics modules named in
its params (engines/modules.py).

Positions and velocities are integrated in float64; the tree is built from float32 positions
(the shared layout). It is the reference for the GPU engine and the fallback without a GPU.
"""
from __future__ import annotations

from time import perf_counter

import numpy as np

from galaxyview.engines import modules
from galaxyview.engines.base import PHASES, Checkpoint, Energies, Engine, StepStats
from galaxyview.engines.cpu.direct import direct_forces, direct_forces_jerk
from galaxyview.engines.cpu.groups import groups_with, make_groups
from galaxyview.engines.cpu.multipoles import compute_multipoles
from galaxyview.engines.cpu.tree import Tree, build_cells, sort_particles
from galaxyview.engines.cpu.forces import tree_forces
from galaxyview.engines.cpu.walk import AccelerationMAC
from galaxyview.engines.system import HostSystem
from galaxyview.errors import EngineError
from galaxyview.model import diagnostics
from galaxyview.model.exact import ExactState
from galaxyview.model.state import ParticleState

_F32_MAX = float(np.finfo(np.float32).max)


class _Particles(HostSystem):
    """The CPU engine's system: its arrays and its force evaluation, for the modules."""

    def __init__(self, engine: "CPUEngine"):
        self._engine = engine
        self.pos = self.vel = self.acc = self.pot = self.mass = self.radius = self.jerk = None
        self.timings: dict = {}  # seconds by phase, summed over this step's force evaluations
        self.pp = self.pc = 0  # interactions of this step's force evaluations

    @property
    def params(self):
        return self._engine.params

    @property
    def n(self) -> int:
        return 0 if self.mass is None else len(self.mass)

    @property
    def provides_jerk(self) -> bool:
        return self._engine.gravity == "direct"

    def compiled(self, name: str):
        return self._engine._compiled(name)

    def forces(self, active=None, jerk: bool = False) -> None:
        if jerk and not self.provides_jerk:
            self._refuse_jerk(self._engine.gravity)
        self._engine._check(self.pos, "positions")
        acc, pot, jrk = self._engine._forces(self.pos, self.timings, active,
                                             self.vel if jerk else None)
        if active is None:
            self.acc, self.pot = acc, pot
            if jerk:
                self.jerk = jrk
        else:
            self.acc[active], self.pot[active] = acc, pot
            if jerk:
                if self.jerk is None:  # only schemes that ask for it keep a jerk array
                    self.jerk = np.zeros_like(self.acc)
                self.jerk[active] = jrk


class CPUEngine(Engine):
    """Engine on the CPU; `tree` is the last octree built (None with direct summation).

    The tree phases are methods (_sort, _build, _multipoles, _walk, _unsort) so that a compiled
    engine (engines/cpu_numba) can replace them and keep the rest: state, modules, checks."""

    name = "reference"

    def __init__(self, params=None, gravity: str | None = None):
        super().__init__(params, modules.gravity_for(params, "cpu", gravity))
        self.tree: Tree | None = None
        self._loaded: ParticleState | None = None  # tags and meta of the loaded state
        self.system = _Particles(self)
        self.integrator, self.boundary, self.collision = modules.create(self.params, "cpu",
                                                                        self.system)
        self._time = 0.0
        self._acc_known = False  # system.acc holds forces of the state (the relative MAC's)

    @property
    def device_name(self) -> str:
        return "CPU (numpy)"

    # -- state -------------------------------------------------------------------------------
    def load(self, state: ParticleState) -> None:
        if state.n == 0:
            raise EngineError("the state has no particles; load a scene with at least one")
        state.validate()
        s = self.system
        self._loaded = state.copy()
        s.pos = state.pos.astype(np.float64)
        s.vel = state.vel.astype(np.float64)
        s.mass = state.mass.astype(np.float64)
        s.radius = state.radius.astype(np.float64)
        s.acc, s.pot, s.jerk = np.zeros_like(s.pos), np.zeros_like(s.mass), None
        self._acc_known = False
        self._time = s.time = float(state.time)
        self.steps_done = 0
        s.timings, s.pp, s.pc = dict.fromkeys(PHASES, 0.0), 0, 0
        self.boundary.apply()
        self.collision.start()
        self.integrator.start()
        if not (np.isfinite(s.acc).all() and np.isfinite(s.pot).all()):
            raise EngineError(
                "the loaded state gives non-finite forces (particles at the same position "
                "without softening?); set eps > 0 or remove the coincident particles")

    def exact_state(self) -> ExactState:
        """float64 pos, vel, acc, pot (copies), the steps and the integrator's save()."""
        s = self.system
        return ExactState(self.state(), self.name, self.gravity, self.params, s.pos.copy(),
                          s.vel.copy(), s.acc.copy(), s.pot.copy(), self.steps_done,
                          self.integrator.save())

    def load_exact(self, exact: ExactState) -> None:
        """The stored float64 arrays as they are; the stored forces where this engine with
        these parameters made them (else evaluated anew by integrator.start()); then
        integrator.restore() with the integrator's saved state (or {})."""
        state = exact.state
        if state.n == 0:
            raise EngineError("the state has no particles; load a scene with at least one")
        state.validate()
        s = self.system
        self._loaded = state.copy()
        s.pos = np.array(state.pos if exact.pos is None else exact.pos, np.float64)
        s.vel = np.array(state.vel if exact.vel is None else exact.vel, np.float64)
        s.mass = state.mass.astype(np.float64)
        s.radius = state.radius.astype(np.float64)
        self._check(s.pos, "positions")
        self._time = s.time = float(state.time)
        self.steps_done = int(exact.steps)
        s.timings, s.pp, s.pc = dict.fromkeys(PHASES, 0.0), 0, 0
        s.jerk = None
        self._acc_known = exact.forces_reusable(self.name, self.gravity, self.params)
        if self._acc_known:
            s.acc, s.pot = np.array(exact.acc, np.float64), np.array(exact.pot, np.float64)
        else:
            s.acc, s.pot = np.zeros_like(s.pos), np.zeros_like(s.mass)
            self.integrator.start()
        self.integrator.restore(exact.integrator_state(self.params.integrator))

    def state(self) -> ParticleState:
        loaded, s = self._need_state(), self.system
        return ParticleState(s.pos, s.vel, s.mass, loaded.component, loaded.galaxy,
                             self._time, dict(loaded.meta), radius=s.radius)

    @property
    def n(self) -> int:
        return self.system.n

    @property
    def time(self) -> float:
        return self._time

    # -- work --------------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        self._need_state()
        for _ in range(self._step_count(n)):
            self._step()

    def _step(self) -> None:
        s = self.system
        kept = {k: getattr(s, k).copy() for k in ("pos", "vel", "acc", "pot", "jerk")
                if getattr(s, k) is not None}
        s.timings, s.pp, s.pc = dict.fromkeys(PHASES, 0.0), 0, 0
        t0 = perf_counter()
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # (_check)
                advanced = self.integrator.step(self.params.dt)
                s.time = self._time + advanced
                self.boundary.apply()
                t1 = perf_counter()
                self.collision.resolve()
                collide = perf_counter() - t1
            self._check(s.acc, "accelerations")
            self._check(s.vel, "velocities")
        except BaseException:  # a NaN (EngineError), MemoryError or Ctrl-C mid-step
            for k, v in kept.items():  # the last good state stays
                setattr(s, k, v)
            s.time = self._time
            raise
        self._time += advanced
        self.steps_done += 1
        forces = sum(v for k, v in s.timings.items() if k != "integrate")
        self.stats.timings_ms["integrate"] = 1e3 * (perf_counter() - t0 - forces - collide)
        if self.params.collision != "none":
            self.stats.timings_ms["collide"] = 1e3 * collide
        self.stats.collisions = self.collision.resolved
        self.stats.deferred = self.collision.deferred

    def _check(self, a: np.ndarray, what: str) -> None:
        """EngineError when a step made `a` non-finite (or beyond float32)."""
        if np.isfinite(a).all() and (what != "positions" or np.abs(a).max() < _F32_MAX):
            return
        kind = "NaN" if np.isnan(a).any() else "infinite"
        p = self.params
        raise EngineError(
            f"step {self.steps_done + 1}: {what} became {kind}; reduce dt (now {p.dt:g}) or "
            f"increase eps (now {p.eps:g}). The state is kept at t = {self._time:g}.")

    def _forces(self, pos: np.ndarray, timings: dict, active=None, vel=None):
        """(acc, pot, jerk) at pos (in the loaded order) of all particles or of `active`; the
        jerk (direct gravity only) when `vel` is given, else None. Fills self.stats and adds
        the phases' seconds to `timings`."""
        p, n, mass, jerk = self.params, len(pos), self.system.mass, None
        if self.gravity == "direct":
            t0 = perf_counter()
            acc, pot, jerk = self._direct(pos, vel, active)
            timings["walk"] += perf_counter() - t0
            pp, pc = n * (n if active is None else len(acc)), 0
        else:  # an active subset: only the groups holding active particles walk
            t0 = perf_counter()
            sorted_ = self._sort(pos.astype(np.float32), mass)
            t1 = perf_counter()
            tree = self._build(sorted_)
            t2 = perf_counter()
            self._multipoles(tree)
            t3 = perf_counter()
            walking = tree
            if active is not None:
                mask = np.zeros(n, bool)
                mask[active] = True
                walking = groups_with(tree, mask[tree.order])
            amac = None
            if p.mac == "acceleration" and self._acc_known:  # else Bonsai's, as GADGET's first
                amac = AccelerationMAC.of(walking, self.system.acc[tree.order], p.G, p.alpha)
            acc_s, pot_s, pp, pc = self._walk(walking, amac)
            for offset in self._ghosts():
                a, q, gpp, gpc = self._walk_ghost(walking, offset, amac)
                acc_s += a
                pot_s += q
                pp, pc = pp + gpp, pc + gpc
            acc, pot = self._unsort(tree.order, acc_s, pot_s)
            if active is not None:
                acc, pot = acc[active], pot[active]
            t4 = perf_counter()
            for k, dt in (("keys_sort", t1 - t0), ("build", t2 - t1), ("multipoles", t3 - t2),
                          ("walk", t4 - t3)):
                timings[k] += dt
            self.tree = tree
        s = self.system
        s.pp, s.pc = s.pp + pp, s.pc + pc
        self._acc_known = self._acc_known or active is None
        self.stats = StepStats({k: 1e3 * v for k, v in timings.items()}, s.pp, s.pc, n)
        return acc, pot, jerk

    def _direct(self, pos: np.ndarray, vel, active):
        """Direct summation: (acc, pot, jerk) of all particles or of `active`; the jerk
        (None without `vel`) takes no periodic images."""
        p, mass = self.params, self.system.mass
        if vel is None:
            acc, pot = direct_forces(pos, mass, p.eps, p.G, targets=active,
                                     ghosts=self._ghosts())
            return acc, pot, None
        return direct_forces_jerk(pos, vel, mass, p.eps, p.G, targets=active)

    def _compiled(self, name: str):
        """The system's compiled routine `name` (none here: numpy only)."""
        return None

    # -- the tree phases (numpy) ------------------------------------------------------------
    def _sort(self, pos32: np.ndarray, mass: np.ndarray) -> dict:
        return sort_particles(pos32, mass)

    def _build(self, sorted_: dict) -> Tree:
        tree = build_cells(sorted_, self.params.n_leaf)
        make_groups(tree, self.params.n_crit)
        return tree

    def _multipoles(self, tree: Tree) -> None:
        compute_multipoles(tree)

    def _walk(self, tree: Tree, amac: AccelerationMAC | None = None):
        p = self.params
        return tree_forces(tree, p.theta, p.eps, p.G, amac=amac)

    def _unsort(self, order: np.ndarray, acc_s: np.ndarray, pot_s: np.ndarray):
        """The tree's sorted-order acc and pot in the loaded order (acc[order] = acc_s)."""
        acc, pot = np.empty_like(acc_s), np.empty_like(pot_s)
        acc[order], pot[order] = acc_s, pot_s
        return acc, pot

    def _walk_ghost(self, tree: Tree, offset: np.ndarray, amac=None):
        """Forces of the tree's image shifted by `offset` on its particles (numpy walk)."""
        p = self.params
        return tree_forces(tree, p.theta, p.eps, p.G, amac=amac, offset=offset)

    def _on_force_params_changed(self) -> None:
        if self._loaded is not None:
            self.system.timings, self.system.pp, self.system.pc = dict.fromkeys(PHASES, 0.0), 0, 0
            self.integrator.forces_changed()

    def accelerations(self) -> tuple[np.ndarray, np.ndarray]:
        self._need_state()
        return self.system.acc.copy(), self.system.pot.copy()

    def energies(self) -> Energies:
        self._need_state()
        s = self.system
        return Energies(diagnostics.kinetic_energy(s.vel, s.mass),
                        diagnostics.potential_energy(s.mass, s.pot))

    def direct_energies(self) -> Energies:
        """Float64 direct summation (chunked)."""
        self._need_state()
        s = self.system
        _, pot = direct_forces(s.pos, s.mass, self.params.eps, self.params.G)
        return Energies(diagnostics.kinetic_energy(s.vel, s.mass),
                        diagnostics.potential_energy(s.mass, pot))

    def checkpoint(self, reuse: Checkpoint | None = None) -> Checkpoint:
        self._need_state()
        if reuse is not None:
            reuse.free()  # host arrays: a copy costs what reusing them would
        arrays = {k: v.copy() for k, v in vars(self.system).items()
                  if isinstance(v, np.ndarray)}
        states = self._module_states()
        return Checkpoint(self._time, self.steps_done, self.params,
                          sum(a.nbytes for a in arrays.values()) + self._states_nbytes(states),
                          False, arrays, states)

    def restore(self, checkpoint: Checkpoint) -> None:
        self._need_state()
        if checkpoint.data is None or len(checkpoint.data["pos"]) != self.n:
            raise EngineError("this checkpoint is of another particle set or was freed")
        for k, v in checkpoint.data.items():
            setattr(self.system, k, v.copy())
        self._time = self.system.time = checkpoint.time
        self.tree = None
        self._restore_modules(checkpoint)

    def sample_forces(self, targets: np.ndarray):
        from galaxyview.engines.cpu.direct import direct_forces

        self._need_state()
        if self._no_gravity():
            return None
        s, targets = self.system, np.asarray(targets, np.int64)
        ref, _ = direct_forces(s.pos, s.mass, self.params.eps, self.params.G, targets=targets,
                               ghosts=self._ghosts())
        return s.acc[targets].copy(), ref

    def tree_boxes(self, level_lo: int, level_hi: int) -> np.ndarray | None:
        t = self.tree
        if t is None:
            return None
        pick = (t.level >= level_lo) & (t.level <= level_hi)
        return np.c_[t.center[pick], t.size[pick]].astype(np.float32)

    def close(self) -> None:
        for module in (self.integrator, self.boundary, self.collision):
            module.close()
        self.tree = self._loaded = None
        s = self.system
        s.pos = s.vel = s.acc = s.pot = s.mass = s.radius = s.jerk = None

    def _need_state(self) -> ParticleState:
        if self._loaded is None:
            raise EngineError("no particles loaded: call load(state) first")
        return self._loaded
