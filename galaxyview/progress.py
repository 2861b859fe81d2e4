"""Progress of long work on stderr: a tqdm bar on a terminal; in a log (stderr not a terminal:
nohup, a batch job) a plain line every LOG_EVERY_S seconds. Under mpirun, rank 0's stderr is
mpirun's pipe: the launcher sets GALAXYVIEW_TERMINAL=1 when its own stderr is a terminal."""
from __future__ import annotations

import os
import sys
import time

from tqdm import tqdm

TERMINAL_ENV = "GALAXYVIEW_TERMINAL"
LOG_EVERY_S = 60.0


def on_terminal() -> bool:
    return os.environ.get(TERMINAL_ENV) == "1" or sys.stderr.isatty()


def bar(total: int, desc: str, unit: str = "step", disable: bool = False, **options):
    """A progress bar: tqdm's (update, set_postfix_str, write, close) or LogLines."""
    if disable or on_terminal():
        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                    disable=disable, **options)
    return LogLines(total, desc, unit)


class LogLines:
    """tqdm's calls for a log: a line every LOG_EVERY_S seconds with the count, the share
    done, the time spent and the time left."""

    def __init__(self, total: int, desc: str, unit: str):
        self.total, self.desc, self.unit, self.n, self.postfix = total, desc, unit, 0, ""
        self.start = self.last = time.monotonic()

    def update(self, k: int = 1) -> None:
        self.n += k
        now = time.monotonic()
        if now - self.last >= LOG_EVERY_S:
            self.last = now
            self.write(self.line(now))

    def line(self, now: float) -> str:
        spent = now - self.start
        text = f"{self.desc}: {self.n}/{self.total} {self.unit}s"
        if self.total:
            text += f" ({100 * self.n / self.total:.0f}%)"
        text += f", {tqdm.format_interval(spent)} spent"
        if 0 < self.n < self.total:
            text += f", about {tqdm.format_interval(spent * (self.total / self.n - 1))} left"
        return text + (f"; {self.postfix}" if self.postfix else "")

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text

    def write(self, text: str, file=None) -> None:
        stream = file or sys.stderr
        stream.write(text + "\n")
        stream.flush()

    def close(self) -> None:
        pass


def note(text: str) -> None:
    """One line on stderr now (above any tqdm bar on a terminal): what long work does next."""
    tqdm.write(text, file=sys.stderr)
