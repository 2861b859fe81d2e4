"""Stopping a long command cleanly: Ctrl-C (SIGINT), SIGTERM and SIGHUP.

`take_stop_signals` (the command line) handles each of the three that is not ignored: a
background job of a script starts with SIGINT ignored, nohup ignores SIGHUP; SIGTERM (kill,
timeout, a batch system) then still stops it. A stop is acted on at a
safe point: inside `Interrupt.deferred` (a run's step, a recording's frame) it sets
`requested` and a second one raises KeyboardInterrupt at once; elsewhere KeyboardInterrupt is
raised at once. Rank 0 of an MPI job `hold`s: a stop is only noted there (never raised inside
a collective, where the other processes would be left waiting) and `check()` raises it at
the end of a command, when every process has left its collectives; the launcher kills a job
that does not stop within its grace period (cli/processes.py).
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
NOTE_ENV = "GALAXYVIEW_STOP_NOTE"  # a file where the launcher writes the signal it passes on

_came: list[int] = []  # the stop signals taken, in order
_deferring: list = []  # the Interrupts in force (main thread), innermost last
_state = {"held": False, "pending": False, "acted": False, "raised": 0, "shield": 0,
          "postponed": None}


def _handle(signum, frame) -> None:
    _came.append(signum)
    _act(signum)


def _act(signum) -> None:
    if _state["shield"]:
        _state["postponed"] = signum  # acted on when the shielded block is done
        return
    if _state["held"] and _state["acted"]:
        return  # (held) already stopping: the state is being kept
    if _deferring:
        _deferring[-1].stop()
    elif _state["held"]:
        _state["pending"] = True
    else:
        _state["raised"] += 1
        raise KeyboardInterrupt


def take_stop_signals() -> None:
    """(main thread) SIGINT, SIGTERM and SIGHUP stop this process, each unless ignored."""
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _handle)


def hold(passed_as: int | None = None) -> None:
    """(rank 0 of an MPI job, main thread) stops are noted, raised by `check` (the first alone:
    later ones do not cut short the keeping of the state); `passed_as`: the signal the
    launcher passes a stop on as (its note names the stop)."""
    _state["held"] = True
    take_stop_signals()
    if passed_as is not None:
        def passed_on(signum, frame):
            _handle(forwarded(), frame)

        signal.signal(passed_as, passed_on)


def held() -> bool:
    return _state["held"]


def forwarded() -> int:
    """The stop signal the launcher wrote to its note (SIGINT when it cannot be read)."""
    try:
        with open(os.environ[NOTE_ENV]) as note:
            return signal.Signals[note.read().strip()].value
    except (KeyError, OSError, ValueError):
        return signal.SIGINT


def check() -> None:
    """(held) Raise KeyboardInterrupt, once, for a stop noted outside `Interrupt.deferred`;
    called where no collective is in progress."""
    if _state["pending"] and not _deferring and \
            threading.current_thread() is threading.main_thread():
        _state["pending"], _state["acted"] = False, True
        raise KeyboardInterrupt


def stopped_by() -> int | None:
    """The stop signal other than SIGINT (SIGTERM or SIGHUP) that came last, or None."""
    return _came[-1] if _came and _came[-1] != signal.SIGINT else None


def what_stopped() -> str:
    """'Ctrl-C', 'SIGTERM' or 'SIGHUP'."""
    sig = stopped_by()
    return "Ctrl-C" if sig is None else signal.Signals(sig).name


@contextlib.contextmanager
def shielded():
    """(main thread) A stop waits until the block is done: a write that must not be cut in
    half (an archive's snapshot, the last state), even by a second Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state["shield"] += 1
    try:
        yield
    finally:
        _state["shield"] -= 1
        sig = _state["postponed"]
        if not _state["shield"] and sig is not None:
            _state["postponed"] = None
            _act(sig)


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
    """A stop during `deferred` sets `requested` (the caller stops at its next safe point); a
    second raises KeyboardInterrupt at once (not where stops are held: the launcher ends the
    job). Outside the main thread nothing is deferred. Without `take_stop_signals` (the
    Python API) Ctrl-C is deferred, unless ignored."""

    def __init__(self):
        self.requested = False

    def stop(self) -> None:
        if self.requested and not _state["held"]:
            _state["raised"] += 1
            raise KeyboardInterrupt
        self.requested = _state["acted"] = True

    @contextlib.contextmanager
    def deferred(self):
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        if _state["pending"]:  # (held) a stop came before: stop at the first safe point
            _state["pending"] = False
            self.requested = _state["acted"] = True
        _deferring.append(self)
        own = lambda previous: None if previous in (signal.SIG_IGN, _handle) else _handle
        try:
            with _sigint(own):
                yield self
        finally:
            _deferring.remove(self)


class Noticed:
    """A stop that lands in native code calling back into Python (numba's compiler) can be
    swallowed there: `watch` remembers it, `check` raises it afterwards."""

    def __init__(self):
        self.came = False
        self._raised = None

    @contextlib.contextmanager
    def watch(self):
        def noticing(previous):
            def handler(signum, frame):
                self.came = True
                previous(signum, frame)
            return handler if callable(previous) and previous is not _handle else None

        self._raised = _state["raised"]
        with _sigint(noticing):
            yield self

    def check(self) -> None:
        if self.came or (self._raised is not None and _state["raised"] > self._raised):
            self.came, self._raised = False, _state["raised"]
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
