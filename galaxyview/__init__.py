"""galaxyview: a real-time galaxy collision viewer built on a GPU Barnes-Hut tree code.

Python API (docs/python-api.md): `galaxyview.open(source, ...)` gives a Simulation,
`galaxyview.load(path)` a Snapshot; errors are `galaxyview.GalaxyviewError`.
"""
import os

# numba colours its error messages through colorama where that is installed, whose exit
# handler then writes a terminal reset to stdout on a terminal (mpirun gives its ranks one),
# around a process's JSON output: set before any galaxyview module imports numba
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

from galaxyview.errors import (EngineError, GalaxyviewError, ParameterError, SceneError,
                               SnapshotError)
from galaxyview.version import __version__

_API = ("open", "load", "Simulation", "Snapshot", "UnitSystem")


def __getattr__(name):
    if name in _API:  # imported on first use: `import galaxyview.model` stays light
        from galaxyview import api

        return getattr(api, name)
    raise AttributeError(f"module 'galaxyview' has no attribute {name!r}")


__all__ = ["EngineError", "GalaxyviewError", "ParameterError", "SceneError", "SnapshotError",
           "__version__", *_API]
