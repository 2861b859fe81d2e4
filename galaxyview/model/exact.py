"""An engine's state as exactly as it holds it: what a bit-identical restart needs.

`ParticleState` is float32 (the shared layout); the CPU engine integrates in float64 and its
integrator may keep state of its own (old forces, time-step levels). An `ExactState` carries
both, so that loading it into an engine of the same kind continues the run bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from galaxyview.errors import SnapshotError
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState

# Params fields the forces depend on: stored forces are reused only where these agree.
FORCE_KEYS = ("theta", "eps", "G", "n_leaf", "n_crit", "mac", "alpha")


@dataclass
class ExactState:
    """state: the float32 view (tags, time, meta); pos, vel, acc (N, 3) and pot (N,): the
    engine's own arrays in the loaded order and its own precision (float64 on the CPU engine,
    float32 on the GPU), None where it has none; kind: the engine kind that made it ("cpu",
    "gpu"); gravity: "tree" or "direct"; params: the Params in force; steps: steps done since
    the engine's load; integrator: the integrator's own state (`Integrator.save()`: names ->
    per-particle arrays in the loaded order or scalars)."""

    state: ParticleState
    kind: str
    gravity: str
    params: Params
    pos: np.ndarray | None = None
    vel: np.ndarray | None = None
    acc: np.ndarray | None = None
    pot: np.ndarray | None = None
    steps: int = 0
    integrator: dict = field(default_factory=dict)

    def __post_init__(self):
        n = self.state.n
        for name, shape in (("pos", (n, 3)), ("vel", (n, 3)), ("acc", (n, 3)), ("pot", (n,))):
            value = getattr(self, name)
            if value is not None and np.shape(value) != shape:
                raise SnapshotError(f"exact {name} has shape {np.shape(value)}, expected {shape}")

    @property
    def time(self) -> float:
        return self.state.time

    def forces_reusable(self, kind: str, gravity: str, params: Params) -> bool:
        """True when stored accelerations are those the engine `kind` would compute now."""
        return (self.acc is not None and self.pot is not None and kind == self.kind
                and gravity == self.gravity
                and all(getattr(params, k) == getattr(self.params, k) for k in FORCE_KEYS))

    def integrator_state(self, name: str) -> dict:
        """The saved integrator state if it is the named scheme's, else {}."""
        return self.integrator if name == self.params.integrator else {}

    @classmethod
    def of_state(cls, state: ParticleState, params: Params | None = None) -> "ExactState":
        """No more than a ParticleState holds (a snapshot of another format)."""
        return cls(state, kind="file", gravity="tree", params=params or Params())
