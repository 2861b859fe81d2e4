"""Physics modules chosen by name, one small class per choice and engine kind (REBOUND's way):
integrators, boundaries and collisions.

An engine builds its modules from `params.integrator`, `params.boundary` and `params.collision`
and calls them at fixed points of a step:

    load:  boundary.apply(); collision.start(); integrator.start()
    step:  integrator.step(dt) (asks the engine for forces); boundary.apply(); collision.resolve()
    theta or eps changed: integrator.forces_changed()

Modules talk to the engine through its `system` (engines/system.py: the particle arrays, forces
on all or an active subset, kernel launches on the GPU) and keep their own state. Registry
entries name the class per engine kind as "package.module:Class" (imported when chosen, so a GPU
module never loads pycuda on a CPU machine) or give the class itself. Adding a module is one
module file and one `add` line below.
"""
from __future__ import annotations

import abc
import importlib

from galaxyview.errors import EngineError
from galaxyview.model.params import Params

KINDS = ("cpu", "gpu")


class Module:
    """A physics module for one engine kind. `kernels`: on the GPU, CUDA source text or a
    kernels/ file name (ending in .cu) compiled with the engine's kernels; launch them with
    `system.launch(name, ...)`."""

    name = "?"
    kernels: str | None = None

    def __init__(self, system):
        self.system = system

    def close(self) -> None:
        """Free what the module holds (device memory); the engine's close() calls it."""

    def save(self) -> dict:
        """The module's own state, for checkpoints and exact snapshots (see Integrator.save);
        default: none."""
        return {}

    def restore(self, saved: dict) -> None:
        """Take back what save() gave; default: nothing to do."""


class Integrator(Module, metaclass=abc.ABCMeta):
    """Advances positions and velocities; owns its state (old accelerations, time steps).

    `gravity`: the gravity the scheme needs ("direct" for the Hermite schemes, which need the
    jerk of all pairs), or None for the engine's default (the tree)."""

    gravity: str | None = None
    uses_eta = False  # its time steps come from params.eta (block or adaptive steps)

    def start(self) -> None:
        """After a load: what the scheme needs before its first step (forces at t0)."""
        self.system.forces()

    @abc.abstractmethod
    def step(self, dt: float) -> float:
        """One step of (shared) size dt; returns the simulated time it advanced."""

    def forces_changed(self) -> None:
        """theta or eps changed: refresh stored forces (no step)."""
        self.system.forces()

    def time_steps(self):
        """A base.TimeSteps (block-step levels and activity of the last step) for a scheme
        with individual time steps; None for a shared step."""
        return None

    def save(self) -> dict:
        """The scheme's own state beyond positions, velocities, accelerations and potentials,
        for a bit-identical restart: names -> per-particle numpy arrays in the loaded order
        (the engine's own order converted back, as `state()` gives it) or scalars (int, float,
        bool, str). Archives store it beside the particles (`engines/base.py`
        `Engine.exact_state`). Default: nothing (a leapfrog needs only x, v, a)."""
        return {}

    def restore(self, saved: dict) -> None:
        """Take back what `save()` gave, after the engine restored positions, velocities and,
        where it kept them, accelerations and potentials (`system.acc`, `system.pot` on the
        CPU; when they were not kept, `start()` has just computed them). `saved` is {} when
        the snapshot was made by another integrator or holds no exact state: then keep what
        `start()` set up. Default: nothing to do."""


class Boundary(Module):
    def apply(self) -> None:
        """After each step and at load: bring particles back into the domain."""

    def ghosts(self, rings: int | None = None):
        """Position and velocity offsets (K, 3) of the domain's periodic images at the
        system's time (gravity sums over them; collisions look across them); None: open."""
        return None


class Collision(Module):
    resolved = 0  # pairs resolved by the last resolve()
    deferred = 0  # pairs left for the next step by the last resolve() (rounds ran out)
    timings_ms: dict = {}  # GPU: milliseconds of the last resolve() by part (CUDA events)

    def start(self) -> None:
        """After a load (not an exact restart), before the integrator's start: prepare the
        state (hard spheres: separate overlapping ones)."""

    def resolve(self) -> None:
        """After the boundary each step: find and resolve the step's collisions."""


class Registry:
    """name -> {engine kind: class or "module:Class"} for one kind of physics module."""

    def __init__(self, what: str, base: type):
        self.what, self.base = what, base
        self._entries: dict[str, dict] = {}

    def add(self, name: str, *, cpu=None, gpu=None) -> None:
        self._entries[name] = {k: v for k, v in (("cpu", cpu), ("gpu", gpu)) if v is not None}

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def entry(self, name: str) -> dict:
        """{engine kind: class or "module:Class"} of `name`, nothing imported (docs)."""
        return dict(self._entries[name])

    def names(self, kind: str | None = None) -> list[str]:
        """Module names, all or those available on engine `kind`."""
        return [n for n, e in self._entries.items() if kind is None or kind in e]

    def get(self, name: str, kind: str) -> type:
        entry = self._entries.get(name)
        if entry is None:
            raise EngineError(f"unknown {self.what} {name!r}; choose one of "
                              f"{', '.join(self.names()) or 'none'}")
        impl = entry.get(kind)
        if impl is None:
            raise EngineError(f"the {self.what} {name!r} is not available on the {kind.upper()} "
                              f"engine; there: {', '.join(self.names(kind)) or 'none'}")
        if isinstance(impl, str):
            path, _, cls = impl.partition(":")
            impl = getattr(importlib.import_module(path), cls)
        if not issubclass(impl, self.base):
            raise EngineError(f"{self.what} {name!r}: {impl!r} is not a {self.base.__name__}")
        return impl


INTEGRATORS = Registry("integrator", Integrator)
BOUNDARIES = Registry("boundary", Boundary)
COLLISIONS = Registry("collision", Collision)

INTEGRATORS.add("leapfrog", cpu="galaxyview.engines.integrators.leapfrog_cpu:Leapfrog",
                gpu="galaxyview.engines.integrators.leapfrog_gpu:Leapfrog")
INTEGRATORS.add("hermite4", cpu="galaxyview.engines.integrators.hermite_cpu:Hermite4",
                gpu="galaxyview.engines.integrators.hermite_gpu:Hermite4")
INTEGRATORS.add("hermite4-shared", cpu="galaxyview.engines.integrators.hermite_cpu:Hermite4Shared",
                gpu="galaxyview.engines.integrators.hermite_gpu:Hermite4Shared")
INTEGRATORS.add("leapfrog-hier",
                cpu="galaxyview.engines.integrators.leapfrog_hier_cpu:HierarchicalLeapfrog",
                gpu="galaxyview.engines.integrators.leapfrog_hier_gpu:HierarchicalLeapfrog")
INTEGRATORS.add("sei", cpu="galaxyview.engines.integrators.sei_cpu:SEI",
                gpu="galaxyview.engines.integrators.sei_gpu:SEI")
BOUNDARIES.add("open", cpu=Boundary, gpu=Boundary)  # nothing to do: space is open
BOUNDARIES.add("shear-periodic", cpu="galaxyview.engines.boundaries.shear_cpu:ShearPeriodic",
               gpu="galaxyview.engines.boundaries.shear_gpu:ShearPeriodic")
COLLISIONS.add("none", cpu=Collision, gpu=Collision)  # point masses pass through each other
COLLISIONS.add("hard-spheres",
               cpu="galaxyview.engines.collisions.hard_spheres_cpu:HardSpheres",
               gpu="galaxyview.engines.collisions.hard_spheres_gpu:HardSpheres")

REGISTRIES = {"integrator": INTEGRATORS, "boundary": BOUNDARIES, "collision": COLLISIONS}


def gravity_for(params, kind: str, gravity: str | None) -> str:
    """The gravity an engine of `kind` runs for `params`: `gravity` when given (checked against
    what the integrator needs), else the integrator's ("direct" for Hermite) or "tree"."""
    params = params or Params()
    needs = INTEGRATORS.get(params.integrator, kind).gravity
    if gravity is None:
        return needs or "tree"
    if needs and gravity != needs:
        raise EngineError(f"the {params.integrator} integrator needs {needs} gravity, not "
                          f"{gravity!r}; leave the gravity unset to get it")
    return gravity


def check_names(params, kind: str) -> None:
    """EngineError unless every module `params` names exists for engine `kind`."""
    for what, registry in REGISTRIES.items():
        registry.get(getattr(params, what), kind)


def create(params, kind: str, system) -> tuple[Integrator, Boundary, Collision]:
    """The modules `params` names, built for engine `kind` around `system`."""
    out = []
    for what in ("integrator", "boundary", "collision"):
        name = getattr(params, what)
        module = REGISTRIES[what].get(name, kind)(system)
        module.name = name
        out.append(module)
    return tuple(out)
