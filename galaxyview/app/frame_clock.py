"""Where the window's frame time goes: the GUI's draw, and its wait for the engine's next state.

The worker steps while the GUI draws, so a frame takes the longer of the two: when the step is
longer, the GUI waits between the end of a paint and the arrival of the next state (`wait`);
when the draw is longer, the engine waits instead and `wait` is near zero. Averages over the
last `span_s` seconds; no Qt, so it is tested on its own."""
from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class FrameSplit:
    draw_ms: float  # a paint, on average
    wait_ms: float  # the GUI's wait for the next state, per state drawn
    states: int  # states that arrived in the span

    def limit(self, step_ms: float) -> str:
        """'step' when the engine sets the pace, 'draw' when the drawing does."""
        return "step" if step_ms > self.draw_ms or self.wait_ms > self.draw_ms else "draw"


class FrameClock:
    def __init__(self, span_s: float = 0.5, clock=time.perf_counter):
        self.span_s, self.clock = span_s, clock
        self._paints: list[tuple[float, float]] = []  # (start, end) of recent paints
        self._waits: list[tuple[float, float]] = []  # (arrival, wait) of recent states
        self._last_end = None

    def painted(self, start: float, end: float) -> None:
        self._paints.append((start, end))
        self._last_end = end
        self._trim(end)

    def state_arrived(self, at: float | None = None) -> None:
        """A new state from the worker reached the GUI thread."""
        at = self.clock() if at is None else at
        if self._last_end is not None:  # (before the first paint there is nothing to wait after)
            self._waits.append((at, max(0.0, at - self._last_end)))
            self._trim(at)

    def _trim(self, now: float) -> None:
        old = now - self.span_s
        while self._paints and self._paints[0][1] < old:
            self._paints.pop(0)
        while self._waits and self._waits[0][0] < old:
            self._waits.pop(0)

    def split(self) -> FrameSplit:
        paints, waits = self._paints, self._waits
        draw = sum(b - a for a, b in paints) / len(paints) if paints else 0.0
        wait = sum(w for _, w in waits) / len(waits) if waits else 0.0
        return FrameSplit(1e3 * draw, 1e3 * wait, len(waits))
