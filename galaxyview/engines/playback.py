"""PlaybackEngine: a stored run (an archive's snapshots) shown through the Engine interface,
so the viewer and the movie recorder play it back without simulating.

`frames` is any sequence of `ExactState` (len() and [i]; the archive reader reads one on
demand). step(n) moves n stored states on (stopping at the last); seek(i) jumps.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.base import PHASES, Energies, Engine, StepStats
from galaxyview.errors import EngineError
from galaxyview.model import diagnostics
from galaxyview.model.exact import ExactState
from galaxyview.model.state import ParticleState


class PlaybackEngine(Engine):
    name = "playback"

    def __init__(self, frames, params=None, label: str = "stored run"):
        super().__init__(params)
        if len(frames) == 0:
            raise EngineError(f"{label} holds no snapshots to play back")
        self.frames, self.label = frames, label
        self._index = 0
        self._exact: ExactState | None = None

    @property
    def device_name(self) -> str:
        return f"playback of {self.label}"

    @property
    def frame_count(self) -> int:
        return len(self.frames)

    @property
    def frame_index(self) -> int:
        return self._index

    def seek(self, index: int) -> None:
        count = len(self.frames)
        if not -count <= int(index) < count:
            raise EngineError(f"snapshot {index} does not exist; {self.label} holds {count} "
                              f"(0..{count - 1})")
        self._index = int(index) % count
        self._exact = self.frames[self._index]
        self.params = self._exact.params
        self.steps_done = self._exact.steps
        self.stats = StepStats(dict.fromkeys(PHASES, 0.0), n=self._exact.state.n)

    def load(self, state: ParticleState) -> None:
        """Playback shows the stored states: load() goes back to the first."""
        self.seek(0)

    def state(self) -> ParticleState:
        return self._need().state.copy()

    @property
    def n(self) -> int:
        return self._need().state.n

    @property
    def time(self) -> float:
        return self._need().state.time

    def set_params(self, theta=None, dt=None, eps=None, eta=None, mac=None,
                   alpha=None) -> None:
        raise EngineError("a stored run plays back as it was computed; its parameters are "
                          "fixed (open a single snapshot to simulate with others)")

    def step(self, n: int = 1) -> None:
        self._need()
        n = self._step_count(n)
        if n:
            self.seek(min(self._index + n, len(self.frames) - 1))

    def accelerations(self) -> tuple[np.ndarray, np.ndarray]:
        e = self._need()
        if e.acc is None or e.pot is None:
            raise EngineError(f"{self.label}: snapshot {self._index} stores no accelerations")
        return np.asarray(e.acc, np.float32).copy(), np.asarray(e.pot, np.float32).copy()

    def energies(self) -> Energies:
        e = self._need()
        s = e.state
        vel = s.vel if e.vel is None else e.vel
        kinetic = diagnostics.kinetic_energy(vel, s.mass)
        potential = (float("nan") if e.pot is None else
                     diagnostics.potential_energy(s.mass, e.pot))
        return Energies(kinetic, potential)

    def close(self) -> None:
        self._exact = None

    def _need(self) -> ExactState:
        if self._exact is None:
            raise EngineError("nothing to play back: call load() first")
        return self._exact
