"""A simulation: initial state from a scene or snapshot, parameters, and the engine running it.

Shared by the command line, the viewer and the movie recorder, so they all pick scenes, particle
counts, parameters and engines the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from galaxyview.engines import create_engine, resolve_backend
from galaxyview.engines.base import Engine
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
                    eps: float | None = None, gravity: str = "tree") -> Simulation:
    """Load `source` (a scene name, a .toml file or a Tipsy snapshot), pick the engine and load it.

    The scene's default particle count depends on the engine, so the backend is resolved first.
    """
    kind, why = resolve_backend(backend)
    state, scene = load_initial_state(source, n, kind)
    name = scene.name if scene else Path(source).stem
    base = scene.params if scene else Params()
    units = scene.units if scene else None
    params = base.with_(theta=theta, dt=dt, eps=eps)
    engine, named = create_engine(kind, params, gravity=gravity)
    why = named if kind == "gpu" else why  # the GPU's name, or why the CPU runs
    try:
        engine.load(state)
    except BaseException:
        engine.close()
        raise
    return Simulation(name, engine, state, why, units, scene)
