"""A simulation: initial state from a scene or snapshot, parameters, and the engine running it.

Shared by the command line, the viewer and the movie recorder, so they all pick scenes, particle
counts, parameters and engines the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from galaxyview.engines import create_engine, resolve_backend
from galaxyview.engines.base import Engine
from galaxyview.errors import SceneError
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem

SNAPSHOT_SUFFIXES = (".tipsy", ".std", ".bin", ".dat")


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


def is_snapshot(source: str) -> bool:
    path = Path(source)
    return path.suffix.lower() in SNAPSHOT_SUFFIXES or (path.is_file() and path.suffix != ".toml")


def load_source(source: str, backend: str = "cpu", n: int | None = None):
    """(name, state, scene or None, params from the scene or None, units or None)."""
    if is_snapshot(source):
        from galaxyview.model.tipsy import read_tipsy_state

        if n is not None:
            raise SceneError(f"{source}: --n applies to scenes, not to snapshots "
                             "(a snapshot has a fixed particle count)")
        state = read_tipsy_state(source)
        return Path(source).stem, state, None, None, None
    from galaxyview.model.scene import load_scene

    scene = load_scene(source)
    state = scene.build(n=n, backend=backend)
    return scene.name, state, scene, scene.params, scene.units


def open_simulation(source: str, backend: str = "auto", n: int | None = None,
                    theta: float | None = None, dt: float | None = None,
                    eps: float | None = None, gravity: str = "tree") -> Simulation:
    """Load `source` (a scene name, a .toml file or a Tipsy snapshot), pick the engine and load it.

    The scene's default particle count depends on the engine, so the backend is resolved first.
    """
    kind, _ = resolve_backend(backend)
    name, state, scene, scene_params, units = load_source(source, kind, n)
    base = scene_params or Params()
    params = base.with_(theta=theta, dt=dt, eps=eps)
    engine, why = create_engine(kind, params, gravity=gravity)
    try:
        engine.load(state)
    except BaseException:
        engine.close()
        raise
    return Simulation(name, engine, state, why, units, scene)
