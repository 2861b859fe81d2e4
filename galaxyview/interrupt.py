"""Stopping a long command cleanly: Ctrl-C, and SIGTERM or SIGHUP taken as Ctrl-C.

A run or a recording stops after its current step or frame (`Interrupt.deferred`; a second
Ctrl-C at once), so its state stays whole and a process of a parallel job never leaves the
others in a collective. `stop_signals_as_ctrl_c` makes SIGTERM (kill, timeout, a batch
system) and SIGHUP (a closed terminal; not where it is ignored, as under nohup) raise SIGINT.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading

_came: list[int] = []  # SIGTERM or SIGHUP, when one was taken as Ctrl-C


def stop_signals_as_ctrl_c() -> None:
    """(main thread) SIGTERM and SIGHUP raise SIGINT in this process."""
    def handler(signum, frame):
        _came.append(signum)
        os.kill(os.getpid(), signal.SIGINT)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, handler)


def stopped_by() -> int | None:
    """The signal taken as Ctrl-C (SIGTERM or SIGHUP), or None: Ctrl-C itself, or none."""
    return _came[-1] if _came else None


def what_stopped() -> str:
    """'Ctrl-C', 'SIGTERM' or 'SIGHUP'."""
    sig = stopped_by()
    return "Ctrl-C" if sig is None else signal.Signals(sig).name


@contextlib.contextmanager
def _sigint(make):
    """Inside: SIGINT handled by make(previous handler), unless that gives None (or this is not
    the main thread, where signals are not handled); the previous handler after."""
    previous = signal.getsignal(signal.SIGINT)
    handler = make(previous) if threading.current_thread() is threading.main_thread() else None
    if handler is None:
        yield
        return
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Interrupt:
    """Ctrl-C during `deferred` sets `requested` (the caller stops at its next safe point); a
    second Ctrl-C raises KeyboardInterrupt at once. Outside the main thread, or where SIGINT
    is ignored (a serving rank), nothing is deferred."""

    def __init__(self):
        self.requested = False

    @contextlib.contextmanager
    def deferred(self):
        def handler(signum, frame):
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True

        with _sigint(lambda previous: None if previous is signal.SIG_IGN else handler):
            yield self


class Noticed:
    """A Ctrl-C that lands in native code calling back into Python (numba's compiler) can be
    swallowed there: `watch` remembers it, `check` raises it afterwards."""

    def __init__(self):
        self.came = False

    @contextlib.contextmanager
    def watch(self):
        def noticing(previous):
            def handler(signum, frame):
                self.came = True
                previous(signum, frame)
            return handler if callable(previous) else None

        with _sigint(noticing):
            yield self

    def check(self) -> None:
        if self.came:
            raise KeyboardInterrupt


@contextlib.contextmanager
def held():
    """Inside: a Ctrl-C (or SIGTERM, SIGHUP taken as one) waits; on leaving, it reaches the
    handler that was there before (at most twice), so a write in hand is never cut short
    (when the write fails, its error goes on and the held Ctrl-C is dropped). Nothing is held
    outside the main thread or where SIGINT is ignored."""
    came: list[int] = []

    def make(previous):
        return None if previous is signal.SIG_IGN else lambda signum, frame: came.append(signum)

    with _sigint(make):
        yield
    for _ in came[:2]:
        signal.raise_signal(signal.SIGINT)
