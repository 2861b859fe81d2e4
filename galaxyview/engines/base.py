"""The one engine interface the rest of galaxyview talks to.

Everything render, app, movie, jobs and cli may use of an engine is declared here; physics
modules (integrators, boundaries, collisions) talk to an engine through `engines.system`.
"""
from __future__ import annotations

import abc
import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from galaxyview.errors import EngineError
from galaxyview.model import diagnostics
from galaxyview.model.exact import ExactState
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState, Selection

if TYPE_CHECKING:
    from galaxyview.light import LightView

# Per-phase timing keys of one step, in the order they run.
PHASES = ("keys_sort", "build", "multipoles", "walk", "integrate")


@dataclass
class StepStats:
    """What the last force evaluation cost.

    timings_ms: phase name (PHASES) -> milliseconds of the last step (CUDA events on the GPU,
    perf_counter on the CPU); pp / pc: particle-particle and particle-cell interactions of the
    last force evaluation in total (0 for direct summation's pc); collisions: pairs the
    collision module resolved in the last step (its time is timings_ms["collide"]); deferred:
    touching pairs it left for the next step (its rounds ran out: the time step is too long
    for the collisions); figures: other numbers of the last step, not added into it (the
    parallel engine's LET sizes and the parts of its LET phases).
    """

    timings_ms: dict = field(default_factory=dict)
    pp: int = 0
    pc: int = 0
    n: int = 0
    collisions: int = 0
    deferred: int = 0
    figures: dict = field(default_factory=dict)

    @property
    def pp_per_particle(self) -> float:
        return self.pp / self.n if self.n else 0.0

    @property
    def pc_per_particle(self) -> float:
        return self.pc / self.n if self.n else 0.0

    @property
    def step_ms(self) -> float:
        return float(sum(self.timings_ms.values()))


@dataclass
class TimeSteps:
    """Individual (block) time steps: `counts[k]` particles step with dt / 2^k; over the last
    engine step, `block_steps` force evaluations on active blocks that held `active_fraction`
    of the particles on average (1 for a shared step)."""

    counts: np.ndarray
    block_steps: int
    active_fraction: float

    @property
    def levels(self) -> int:
        """Occupied levels, from the coarsest to the finest in use."""
        used = np.flatnonzero(self.counts)
        return int(used[-1] - used[0] + 1) if used.size else 0


@dataclass
class Checkpoint:
    """An engine's exact state at one moment (Engine.checkpoint), to restore() it later:
    `data` is the engine's own (host arrays, or device memory when on_device); release() frees
    it. The physics modules' own state (their save()) is kept with it."""

    time: float
    steps_done: int
    params: Params
    nbytes: int
    on_device: bool
    data: object
    modules: tuple = ()
    release: object = None  # a callable freeing `data`, or None

    def free(self) -> None:
        if self.release is not None:
            self.release()
            self.release, self.data = None, None


@dataclass
class Energies:
    kinetic: float
    potential: float

    @property
    def total(self) -> float:
        return self.kinetic + self.potential


class Engine(abc.ABC):
    """A gravity solver plus the physics modules chosen by name in `params`: an integrator
    (`params.integrator`), a boundary (`params.boundary`) and a collision module
    (`params.collision`), looked up in `engines.modules`.

    Life cycle: `engine.load(state)`, then `engine.step(n)` any number of times; theta, dt and
    eps may change between steps through `set_params` (no reload). `gravity` is "tree"
    (Barnes-Hut, Bonsai's algorithm) or "direct" (all pairs).
    """

    name: str = "?"  # "cpu" or "gpu": a label for reports, never a switch outside engines
    on_gpu: bool = False  # the work runs on a CUDA device (device_view() gives its arrays)
    splats_light: bool = False  # light(view) makes the frame's light image (no state copy)
    # the particles live in several processes: load_made makes each share where it lives, and
    # state() is a gather (callers keep to sample_state and the engine's own reductions)
    distributed: bool = False

    integrator = None  # the physics modules, built by the engine (engines/modules.py)

    def __init__(self, params: Params | None = None, gravity: str = "tree"):
        if gravity not in ("tree", "direct"):
            raise ValueError(f"gravity must be 'tree' or 'direct', got {gravity!r}")
        self.params = params or Params()
        self.gravity = gravity
        self.stats = StepStats()
        self.steps_done = 0

    # -- description -------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def device_name(self) -> str:
        """What runs the work, for display: 'CPU (numpy)' or the GPU's name."""

    @property
    def modules(self) -> dict:
        """The physics modules in use by kind: {'integrator': 'leapfrog', ...}."""
        p = self.params
        return {"integrator": p.integrator, "boundary": p.boundary, "collision": p.collision}

    # -- state -------------------------------------------------------------------------------
    @abc.abstractmethod
    def load(self, state: ParticleState) -> None:
        """Take a copy of `state` and compute its accelerations (so step() can kick at once)."""

    def load_made(self, maker, workers: int = 1) -> None:
        """Load the particles of a model made in parts (model/ics/parts.py PartMaker):
        a distributed engine makes each process's share where it runs (each in its share of
        the host's CPUs); one process makes them all (`maker.whole`, in up to `workers`
        worker processes)."""
        self.load(maker.whole(workers))

    @abc.abstractmethod
    def state(self) -> ParticleState:
        """A host copy of the current state (synchronised positions and velocities)."""

    def sample_state(self, count: int) -> tuple[np.ndarray, ParticleState]:
        """(original indices, state) of about `count` particles spread over the system, for
        statistics of large systems without copying them all (the window's ring display):
        every k-th particle of the engine's order, which on a tree engine follows the
        space-filling curve. Default: from a full state()."""
        st = self.state()
        index = np.arange(0, st.n, max(1, st.n // max(int(count), 1)))
        return index, st.take(index)

    def exact_state(self) -> ExactState:
        """The state as exactly as the engine holds it, for archives and restarts: positions,
        velocities, accelerations and potentials in the engine's own precision (loaded order),
        the steps done and the integrator's `save()`. Loading it with `load_exact` into an
        engine of the same kind continues bit for bit where the engine is deterministic (the
        CPU engine) and to round-off otherwise. Default: the float32 state and forces."""
        state = self.state()
        acc, pot = self.accelerations()
        saved = {}
        if self.integrator is not None:
            with self.activate():
                saved = self.integrator.save()
        return ExactState(state, self.name, self.gravity, self.params, state.pos, state.vel,
                          acc, pot, self.steps_done, saved)

    def load_exact(self, exact: ExactState) -> None:
        """Load an `ExactState` (from `exact_state()` or an archive): its arrays in their own
        precision, its step count and the integrator's saved state where they belong to this
        engine's kind and parameters; otherwise what `load(exact.state)` does. Default: the
        latter."""
        self.load(exact.state)
        self.steps_done = exact.steps

    @property
    @abc.abstractmethod
    def n(self) -> int:
        """Number of particles loaded."""

    @property
    @abc.abstractmethod
    def time(self) -> float:
        """Simulation time in N-body units."""

    # -- parameters --------------------------------------------------------------------------
    def set_params(self, theta=None, dt=None, eps=None, eta=None, mac=None,
                   alpha=None, sheet=None) -> None:
        """Change theta, dt, eps, eta, the MAC (mac, alpha) or the shearing sheet's
        restitution law or ghost rings (a model.sheet.Sheet whose box and Omega must stay);
        they take effect on the next step (values checked); the forces are evaluated again
        when the force parameters changed."""
        if sheet is not None and (self.params.sheet is None or
                                  (sheet.omega, sheet.lx, sheet.ly) !=
                                  (self.params.sheet.omega, self.params.sheet.lx,
                                   self.params.sheet.ly)):
            raise EngineError("the sheet's Omega and box size are fixed once loaded; rebuild "
                              "the scene to change them")
        new = self.params.with_(theta=theta, dt=dt, eps=eps, eta=eta, mac=mac, alpha=alpha,
                                sheet=sheet)
        forces_changed = (any(getattr(new, k) != getattr(self.params, k)
                              for k in ("theta", "eps", "mac", "alpha"))
                          or _ghost_rings(new) != _ghost_rings(self.params))
        self.params = new
        if forces_changed:
            self._on_force_params_changed()

    def _on_force_params_changed(self) -> None:
        """Hook: engines recompute stored accelerations when theta or eps change."""

    # -- work --------------------------------------------------------------------------------
    @abc.abstractmethod
    def step(self, n: int = 1) -> None:
        """Advance n steps of the integrator (each of size params.dt for a shared step)."""

    @staticmethod
    def _step_count(n) -> int:
        if int(n) != n or n < 0:
            raise EngineError(f"step(n) needs a whole number of steps >= 0, got {n!r}")
        return int(n)

    @abc.abstractmethod
    def accelerations(self) -> tuple[np.ndarray, np.ndarray]:
        """(acc (N, 3), pot (N,)) at the current positions, as host arrays, in the order of
        the loaded state (not the engine's internal sorted order)."""

    @abc.abstractmethod
    def energies(self) -> Energies:
        """Kinetic and potential energy of the current state (potential from the solver)."""

    def direct_energies(self) -> Energies | None:
        """Energies of the current state with the potential by direct summation over all pairs
        (free of the tree's potential error, for benchmarks of energy conservation), where
        the engine can compute it; None elsewhere. Costs N^2 pair terms."""
        return None

    def centre_of_mass(self, mask: np.ndarray | Selection) -> np.ndarray:
        """Centre of mass (3,) float64 of the particles selected by `mask`: bool, loaded
        order, or a Selection (a galaxy and its components, found where the particles are).

        Per frame for the follow camera: engines override it so no whole state is copied."""
        state = self.state()
        if isinstance(mask, Selection):
            mask = mask.mask(state.component, state.galaxy)
        if state.mass[mask].sum() <= 0:  # massless selection: the plain mean
            return state.pos[mask].astype(np.float64).mean(axis=0)
        return diagnostics.centre_of_mass(state.pos[mask], state.mass[mask])

    def time_steps(self) -> TimeSteps | None:
        """The block time-step structure of an integrator with individual steps (Hermite);
        None for a shared step."""
        return self.integrator.time_steps() if self.integrator is not None else None

    @property
    def uses_eta(self) -> bool:
        """Whether the integrator takes its time steps from params.eta (so the control acts)."""
        return self.integrator is not None and self.integrator.uses_eta

    # -- capabilities for render, app, movie and jobs ------------------------------------------
    def tree_boxes(self, level_lo: int, level_hi: int) -> np.ndarray | None:
        """(M, 4) float32 centre x, y, z and size of the cells of levels level_lo..level_hi
        (inclusive) of the last tree; None when the engine keeps no tree (direct gravity,
        nothing loaded)."""
        return None

    def checkpoint(self, reuse: Checkpoint | None = None) -> Checkpoint | None:
        """The exact current state (positions, velocities, forces, time, module state), kept
        where the engine runs, for restore(); None where the engine cannot. `reuse`: a
        checkpoint of this engine no longer wanted, whose memory may hold the new one (no
        allocation); it is freed where it cannot."""
        if reuse is not None:
            reuse.free()
        return None

    def restore(self, checkpoint: Checkpoint) -> None:
        """Go back to `checkpoint` exactly (bitwise: the same steps follow as before). The
        current params stay: when theta or eps differ from the checkpoint's, the forces are
        evaluated again (a branch, "what if")."""
        raise EngineError(f"the {self.name} engine keeps no checkpoints")

    @staticmethod
    def _states_nbytes(states: tuple) -> int:
        """Bytes of the arrays in _module_states() (a checkpoint's memory counts them)."""
        return sum(v.nbytes for st in states for v in st.values() if isinstance(v, np.ndarray))

    def _module_states(self) -> tuple:
        """Copies of the physics modules' own state (their save()), for checkpoint();
        _restore_modules() gives it back to their restore(), with the step count, and evaluates
        the forces again when theta or eps differ from the checkpoint's."""
        import copy

        return tuple(copy.deepcopy(m.save())
                     for m in (self.integrator, self.boundary, self.collision))

    def _restore_modules(self, checkpoint: Checkpoint) -> None:
        import copy

        for m, state in zip((self.integrator, self.boundary, self.collision),
                            checkpoint.modules):
            m.restore(copy.deepcopy(state))
        self.steps_done = checkpoint.steps_done
        then, now = checkpoint.params, self.params
        if (then.theta, then.eps, then.G) != (now.theta, now.eps, now.G):
            self._on_force_params_changed()

    def sample_forces(self, targets: np.ndarray):
        """(acc (T, 3) of the engine's solver, acc (T, 3) of float64 direct summation) at the
        particles `targets` (indices in the loaded order) and the current positions, both
        computed where the engine runs (the live accuracy readout), the sheet's ghost boxes
        included; None where the engine cannot."""
        return None

    def _ghosts(self) -> np.ndarray:
        """The boundary's ghost-box offsets (K, 3) for gravity; (0, 3) when open."""
        ghosts = self.boundary.ghosts()
        return np.zeros((0, 3)) if ghosts is None else ghosts[0]

    def _no_gravity(self) -> bool:
        """A shearing sheet without self-gravity: no forces to sample."""
        return self.params.sheet is not None and not self.params.sheet.self_gravity

    def device_view(self):
        """A `galaxyview.cuda.DeviceView` (the CUDA context and the current device arrays) for
        drawing straight from device memory; None for an engine whose state lives on the host."""
        return None

    def device_memory_bytes(self) -> int | None:
        """Device memory the engine holds; None for a host engine."""
        return None

    def light(self, view: LightView) -> np.ndarray | None:
        """The light image of this view ((h, w, 4) float32, galaxyview.light.splat's image of
        the whole state) made where the particles live, so the renderer need not copy them;
        None where the engine does not offer it (the renderer splats a host copy). Offered
        when `splats_light`: a parallel engine's processes each splat their own particles."""
        return None

    def light_on_device(self, view: LightView):
        """The light image of this view ((h, w, 4) float32, as light(view)) left on the
        engine's GPU for a renderer on that GPU to copy into its texture: (the pycuda context,
        the device pointer), valid until the next engine call; None where the engine does not
        offer it (then light(view) gives it on the host)."""
        return None

    def colour_values(self, mode: str, count: int | None = None) -> np.ndarray | None:
        """(n,) float32 values of colour `mode` (render/look.py) made where the particles
        live, in the loaded order, or about `count` of them spread over the system (enough
        for the colour map's range); None where the engine does not offer them for this mode
        (the renderer computes them from a copy of the state, render/colour.py)."""
        return None

    def activate(self):
        """A context manager making the engine's device current on the calling thread (a
        no-op on the CPU). Threads other than the creator's wrap engine calls in it."""
        return contextlib.nullcontext()

    # -- playback of a stored run (engines/playback.py) ---------------------------------------
    @property
    def frame_count(self) -> int | None:
        """Stored states an engine plays back (each step() moves to the next); None for an
        engine that simulates."""
        return None

    @property
    def frame_index(self) -> int | None:
        """The stored state shown now (0-based), None for an engine that simulates."""
        return None

    def seek(self, index: int) -> None:
        """Show stored state `index` (playback engines only)."""
        raise EngineError(f"the {self.name} engine simulates; it has no stored states to seek")

    def close(self) -> None:
        """Free resources (device memory); the engine is unusable afterwards."""


def _ghost_rings(params: Params) -> int:
    """The rings of ghost boxes the gravity sums over (0 without a shearing sheet)."""
    return params.sheet.ghosts if params.sheet is not None else 0
