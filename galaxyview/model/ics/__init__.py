"""Initial-condition models, registered by the name a scene file gives in [model] type = "...".

Each model is a pair of functions:
  parse(table: Table, units: UnitSystem | None) -> config   validates every key (ends with
      table.finish()); called when the scene file is loaded, so errors show before any work;
  build(config, n: int, rng: numpy.random.Generator) -> ParticleState   makes n particles
      (approximately n where components split by a rule), in N-body units;
and, where its particles are drawn independently, a third:
  maker(config, n: int, seed: int, meta: dict) -> parts.PartMaker   the same model made in
      parts (any range of its n particles alone: a distributed engine's share).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

MODELS: dict[str, "Model"] = {}
_loaded = False


@dataclass(frozen=True)
class Model:
    name: str
    parse: Callable[..., Any]
    build: Callable[..., Any]
    summary: str = ""
    maker: Callable[..., Any] | None = None


def register(name: str, parse, build, summary: str = "", maker=None) -> None:
    MODELS[name] = Model(name, parse, build, summary, maker)


def _load_builtin_models() -> None:
    """Import the modules that register the shipped models (once)."""
    global _loaded
    if _loaded:
        return
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    _loaded = True


def get_model(name: str) -> Model | None:
    _load_builtin_models()
    return MODELS.get(name)


def model_names() -> list[str]:
    _load_builtin_models()
    return sorted(MODELS)
