"""Keeping a long run's states: archive snapshots at an interval (steps, simulated time or wall
time), and the last good state written when a run fails or is interrupted (interrupt.py stops
it at the end of the current step)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from galaxyview.errors import GalaxyviewError, ParameterError
from galaxyview.files import check_free_space
from galaxyview.interrupt import shielded
from galaxyview.snapshots import archive


@dataclass(frozen=True)
class Interval:
    """Save every `steps` steps, every `time` of simulated time, every `wall` seconds (any
    that are set; none set: only the first and last states)."""

    steps: int | None = None
    time: float | None = None
    wall: float | None = None

    def __post_init__(self):
        for name in ("steps", "time", "wall"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ParameterError(f"the archive interval {name} must be > 0, got {value!r}")

    def expected(self, steps: int, dt: float) -> int:
        """About how many snapshots a run of `steps` steps of dt writes (first and last too)."""
        count = 2
        if self.steps:
            count += steps // self.steps
        if self.time:
            count += int(steps * dt / self.time)
        return count


class Checkpoints:
    """Appends the engine's exact state to an archive: at the start, when an interval is due,
    at the end and, when the run stops early, the last good state."""

    def __init__(self, writer: archive.ArchiveWriter, interval: Interval):
        self.writer, self.interval = writer, interval
        self.last_time = None  # simulated time of the last snapshot written
        self.last_step = self._wall = None

    @property
    def path(self):
        return self.writer.path

    @property
    def count(self) -> int:
        return self.writer.count

    def save(self, engine) -> None:
        with shielded():  # (a stop comes after the snapshot, not in the middle of it)
            self.writer.append(engine.exact_state())
        self.last_time, self.last_step = engine.time, engine.steps_done
        self._wall = time.monotonic()

    def after_step(self, engine) -> None:
        i = self.interval
        due = ((i.steps and engine.steps_done - self.last_step >= i.steps)
               or (i.time and engine.time - self.last_time >= i.time * (1 - 1e-12))
               or (i.wall and time.monotonic() - self._wall >= i.wall))
        if due:
            self.save(engine)

    def finish(self, engine) -> None:
        if engine.steps_done != self.last_step:
            self.save(engine)
        self.writer.close()

    def close(self) -> None:
        self.writer.close()


def preflight(path, n: int, count: int, what: str = "the archive") -> None:
    """Refuse a run whose files would not fit the free space of their folder."""
    check_free_space(path, count * archive.snapshot_bytes(n),
                     f"{what} ({count} snapshot{'s' * (count != 1)} of {n} particles)",
                     GalaxyviewError)
