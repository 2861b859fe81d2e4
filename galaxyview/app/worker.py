"""The engine runs in a worker thread, so the window answers while a step takes long.

The GUI posts commands (parameter changes, step batches, reset) into a queue; the worker runs
them in order, holding `engine_lock` while it touches the engine, and reports each result with
a Qt signal. The GUI touches the engine only with the lock taken without waiting (CUDA-GL interop
between steps), so it never blocks on a step. Each command runs inside `engine.activate()`, which
makes the engine's device current on the worker thread.
"""
from __future__ import annotations

import queue
import sys
import threading
import time
import traceback
from dataclasses import dataclass

import numpy as np
from PyQt6.QtCore import QThread, pyqtSignal

from galaxyview.engines.timeline import Timeline
from galaxyview.errors import GalaxyviewError
from galaxyview.jobs.accuracy import live_force_errors
from galaxyview.model.ring_stats import ring_stats
from galaxyview.render.sources import engine_vertices

ENERGY_INTERVAL_S = 0.25  # energies (a full potential evaluation) at most this often
RING_SAMPLE = 65536  # particles the ring display measures (every k-th along the tree order)


@dataclass
class Frame:
    """The engine's state after a command, for the window."""

    steps_done: int
    time: float
    step_ms: float  # wall time per step of the last batch (0 when no step ran)
    energy: float | None  # total energy, when measured after this command
    vertices: np.ndarray | None  # host upload path: the particle vertices; None on the GPU
    params: object  # the engine's Params now
    kind: str = "steps"  # the command: "steps", "params", "reset" or "measure"
    colour_mode: str = "component"  # what the vertices' values are
    accuracy: object = None  # a jobs.accuracy.LiveAccuracy, when checked after this command
    timeline: tuple = ((), None, "")  # kept states' times, the one rewound to, a summary
    time_steps: object = None  # engines.base.TimeSteps of an integrator with block steps
    ring: object = None  # model.ring_stats.RingStats of a ring scene, measured with the energy
    collisions: int = 0  # pairs the collision module resolved in the last step
    deferred: int = 0  # touching pairs it left for the next step (the time step is too long)
    energy_jump: float = 0.0  # what a parameter change (eps, G, theta) did to the energy


class StepWorker(QThread):
    frame_ready = pyqtSignal(object)  # Frame
    failed = pyqtSignal(str)  # a message for the user; the worker keeps running
    batch_failed = pyqtSignal()  # a step batch ended in an error (after failed)

    def __init__(self, engine, load_initial=None, host_path: bool = True, parent=None):
        super().__init__(parent)
        self.engine = engine
        self.load_initial = load_initial  # loads the initial state again (Simulation.reset)
        self.host_path = host_path
        self.engine_lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._last_energy_time = 0.0
        self.pending_steps = 0  # step batches posted and not reported yet (GUI thread only)
        self.colour_mode = "component"  # host path: the vertex values to make (set by the GUI)
        self.accuracy_targets = None  # particles of the live force check (None: off; GUI sets)
        self.timeline = Timeline()  # worker thread only; the GUI posts commands
        self._next_check = 0.0

    # -- GUI side --------------------------------------------------------------------------------
    def set_params(self, **changes) -> None:
        self._queue.put(("params", changes))

    def post_steps(self, n: int) -> None:
        self.pending_steps += 1
        self._queue.put(("steps", int(n)))

    def reset(self) -> None:
        self._queue.put(("reset", None))

    def seek(self, index: int) -> None:
        """Show stored snapshot `index` (an engine that plays back)."""
        self._queue.put(("seek", int(index)))

    def rewind(self, index: int) -> None:
        """Back to kept state `index` of the timeline (0 = oldest)."""
        self._queue.put(("rewind", int(index)))

    def configure_timeline(self, capacity: int, every: int) -> None:
        self._queue.put(("timeline", (capacity, every)))

    def measure(self) -> None:
        """Report the current state (vertices and energy) without stepping."""
        self._queue.put(("measure", None))

    def stop(self, close_engine: bool = False) -> None:
        """Finish the command in progress, then end the thread (closing the engine if asked)."""
        self._queue.put(("stop", close_engine))

    # -- worker thread ---------------------------------------------------------------------------
    def run(self) -> None:
        while True:
            kind, arg = self._queue.get()
            if kind == "stop":
                self._finish(close_engine=arg)
                return
            try:
                with self.engine_lock, self.engine.activate():
                    frame = self._execute(kind, arg)
            except GalaxyviewError as exc:
                self.failed.emit(str(exc))
                frame = None
            except Exception as exc:  # keep the window alive; say what broke
                traceback.print_exc()
                self.failed.emit(f"the engine failed: {type(exc).__name__}: {exc}")
                frame = None
            if frame is not None:
                self.frame_ready.emit(frame)
            elif kind == "steps":
                self.batch_failed.emit()  # the batch is over even though it failed

    def _finish(self, close_engine: bool) -> None:
        """The thread's last command: free the kept states, close the engine if asked. The
        engine's close() makes its device current itself and releases its context, so it runs
        outside activate() (whose exit would pop a context close() has let go). A failure here
        is reported, never raised: the thread ends either way."""
        try:
            with self.engine_lock:
                with self.engine.activate():
                    self.timeline.clear()  # device memory, before the engine goes
                if close_engine:
                    self.engine.close()
        except Exception as exc:  # the window is closing: say it, don't raise in the thread
            self.failed.emit(f"closing the engine failed: {type(exc).__name__}: {exc}")
            print(f"galaxyview: warning: closing the engine failed: {type(exc).__name__}: "
                  f"{exc}", file=sys.stderr, flush=True)
        if close_engine:
            self.engine = self.load_initial = None  # the closed engine goes with its session

    def _execute(self, kind, arg) -> Frame:
        engine = self.engine
        step_ms, before = 0.0, None
        if kind == "params":
            before = float(engine.energies().total)  # the jump: the frame's energy less this
            engine.set_params(**arg)
        elif kind == "steps":
            self.timeline.branch()  # stepping on from a rewound state: a new branch
            t0 = time.perf_counter()
            engine.step(arg)
            step_ms = (time.perf_counter() - t0) * 1e3 / arg
        elif kind == "reset":
            self.timeline.clear()
            self.load_initial()
        elif kind == "seek":
            engine.seek(arg)
        elif kind == "rewind":
            self.timeline.rewind(engine, arg)
        elif kind == "timeline":
            self.timeline.configure(*arg)
        if kind in ("steps", "reset", "measure"):
            self.timeline.keep(engine)
        energy = ring = None
        now = time.perf_counter()
        if kind != "steps" or now - self._last_energy_time >= ENERGY_INTERVAL_S:
            energy = float(engine.energies().total)
            if engine.params.sheet is not None:
                _, s = engine.sample_state(RING_SAMPLE)  # not the whole state, 4 times a second
                ring = ring_stats(s.pos, s.vel, s.mass, s.radius, engine.params.sheet, s.time,
                                  engine.n)
            self._last_energy_time = time.perf_counter()
        vertices, mode = None, self.colour_mode
        if self.host_path and kind not in ("params", "timeline"):
            vertices = engine_vertices(engine, mode)
        t = self.timeline
        return Frame(engine.steps_done, engine.time, step_ms, energy, vertices, engine.params,
                     kind, mode, self._check_accuracy(kind),
                     (tuple(cp.time for cp in t.entries), t.position, t.describe()),
                     engine.time_steps(), ring, engine.stats.collisions,
                     engine.stats.deferred, 0.0 if before is None else energy - before)

    def _check_accuracy(self, kind):
        """The live force check: after theta or eps moved, else when its time has come."""
        targets, now = self.accuracy_targets, time.perf_counter()
        if targets is None or (kind == "steps" and now < self._next_check):
            return None
        found = live_force_errors(self.engine, targets)
        if found is not None:
            self._next_check = time.perf_counter() + found.next_after_s()
        return found
