"""The core: particle state, parameters, units, scenes and diagnostics (numpy only)."""

from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState

__all__ = ["Component", "ParticleState", "Params"]
