"""A simulation: initial state from a scene or snapshot, parameters, and the engine running it.

Shared by the command line, the viewer and the movie recorder, so they all pick scenes, particle
counts, parameters and engines the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from galaxyview.engines import create_engine, module_kind, modules, resolve_backend
from galaxyview.engines.base import Engine
from galaxyview.errors import EngineError, SceneError
from galaxyview.model.params import Params
from galaxyview.model.scene import load_initial_state
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem


@dataclass
class Simulation:
    name: str
    engine: Engine
    initial: ParticleState
    why: str  # why this engine was chosen, one line
    units: UnitSystem | None = None
    scene: object = None  # the Scene, when started from one

    @property
    def time_myr(self) -> float | None:
        return self.engine.time * self.units.time_myr if self.units else None

    def reset(self) -> None:
        self.engine.load(self.initial)

    def close(self) -> None:
        self.engine.close()


def open_simulation(source: str, backend: str = "auto", n: int | None = None,
                    theta: float | None = None, dt: float | None = None,
                    eps: float | None = None, gravity: str = "tree", device: int = 0,
                    integrator: str | None = None, boundary: str | None = None,
                    collision: str | None = None) -> Simulation:
    """Load `source` (a scene name, a .toml file or a Tipsy snapshot), pick the engine and load it.

    The scene's default particle count depends on the engine, so the backend is resolved first.
    integrator, boundary, collision: physics modules by name (default: the scene's).
    """
    kind, _ = resolve_backend(backend, device)
    state, scene = load_initial_state(source, n, kind)
    name = scene.name if scene else Path(source).stem
    base = scene.params if scene else Params()
    units = scene.units if scene else None
    chosen = dict(integrator=integrator, boundary=boundary, collision=collision)
    params = base.with_(theta=theta, dt=dt, eps=eps, **chosen)
    _check_modules(params, module_kind(kind), scene, chosen)
    # the backend as asked: auto falls back to the reference engine if the compiled one fails
    engine, why = create_engine(backend, params, gravity=gravity, device=device)
    try:
        engine.load(state)
    except BaseException:
        engine.close()
        raise
    return Simulation(name, engine, state, why, units, scene)


def _check_modules(params: Params, kind: str, scene, chosen: dict) -> None:
    """An unknown module name fails before any work, naming the scene key it came from."""
    for what, registry in modules.REGISTRIES.items():
        try:
            registry.get(getattr(params, what), kind)
        except EngineError as exc:
            if scene is None or chosen[what] is not None:
                raise
            raise SceneError(f"{scene.source}: params.{what}: {exc}") from None
