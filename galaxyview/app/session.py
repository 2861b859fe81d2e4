"""One running simulation in the window: its worker thread, how positions reach the vertex
buffer, the energy reference, and everything the GUI thread may touch of the engine."""
from __future__ import annotations

import sys

from PyQt6.QtCore import QObject, pyqtSignal

from galaxyview.app.worker import StepWorker
from galaxyview.jobs.accuracy import live_sample
from galaxyview.render.boxes import engine_boxes
from galaxyview.render.sources import EngineLight, framing_positions, make_source

_retired: list = []  # workers finishing their last step after their session has ended


class Session(QObject):
    """Owns the simulation's worker; `frame` is the newest state not yet in the vertex buffer.

    The GUI thread touches the engine only through try_engine(): it takes the worker's lock
    without waiting, so it never blocks on a step (it tries again at the next paint).
    """

    changed = pyqtSignal(object)  # a Frame from the worker
    failed = pyqtSignal(str)

    def __init__(self, sim, canvas, check_accuracy: bool = True):
        super().__init__()
        self.sim, self.canvas = sim, canvas
        canvas.set_current()
        self.source = make_source(sim.engine, canvas.renderer, canvas.context)
        self.host = self.source.worker_vertices  # the worker copies the state into vertices
        # the next batch may step while a frame is drawn: not where the drawing asks the
        # engine for its light (EngineLight), which a stepping engine cannot give
        self.overlap = not isinstance(self.source, EngineLight)
        if not self.overlap:
            self.source.guard = self.try_engine
        self.worker = w = StepWorker(sim.engine, sim.reset, host_path=self.host)
        w.frame_ready.connect(self._on_frame)
        w.failed.connect(self.failed)
        w.batch_failed.connect(self._on_batch_failed)
        self.frame = None  # newest state, not drawn yet
        self.shown_time = float(sim.initial_sample.time)  # simulation time of the state drawn
        self.last = None  # newest state reported
        self.ring = None  # the newest ring diagnostics (ring scenes)
        self.e0 = None
        self.energy_error = None
        self.accuracy = None  # the last live force check (jobs.accuracy.LiveAccuracy)
        self.check_accuracy(check_accuracy)
        self.positions = framing_positions(sim.initial_sample.pos,
                                          sim.initial_sample.component)
        self._boxes_key = None
        self._notice_said = False
        w.start()
        w.measure()  # the first picture and the reference energy

    @property
    def engine(self):
        return self.sim.engine

    @property
    def busy(self) -> bool:
        """A step batch is posted or its result not drawn yet."""
        return self.worker.pending_steps > 0 or self.frame is not None

    def post_steps(self, n: int) -> bool:
        if self.busy:
            return False
        self.worker.post_steps(n)
        return True

    def check_accuracy(self, on: bool) -> None:
        """The live force-error readout on or off (a fixed random sample of particles)."""
        engine = self.sim.engine
        self.worker.accuracy_targets = live_sample(engine.n, engine.on_gpu) if on else None
        if not on:
            self.accuracy = None

    def _on_frame(self, frame) -> None:
        if frame.accuracy is not None and self.worker.accuracy_targets is not None:
            self.accuracy = frame.accuracy
        if frame.kind == "steps":
            self.worker.pending_steps -= 1
        self.last = frame
        if frame.ring is not None:
            self.ring = frame.ring
        if frame.kind not in ("params", "timeline"):
            self.frame = frame
        if frame.energy is not None:
            if self.e0 is None or frame.kind == "reset":
                self.e0 = frame.energy
            elif frame.energy_jump:  # softening or G changed the energy, not the integration
                self.e0 += frame.energy_jump
            self.energy_error = (frame.energy - self.e0) / max(abs(self.e0), 1e-300)
        self.changed.emit(frame)

    def _on_batch_failed(self) -> None:
        self.worker.pending_steps -= 1

    def try_engine(self, fn):
        """(True, fn()) when the worker is idle, else (False, None); never waits."""
        lock = self.worker.engine_lock
        if not lock.acquire(blocking=False):
            return False, None
        try:
            return True, fn()
        finally:
            lock.release()

    def sync(self, look) -> bool:
        """In the GL context before a paint: the newest state into the vertex buffer and the
        tree boxes when shown. True when a step batch became visible."""
        frame, shown = self.frame, False
        if frame is not None:
            if self.host:
                if frame.vertices is not None:
                    v = frame.vertices
                    self.source.refresh(v, frame.colour_mode)
                    self.positions = framing_positions(v["a_position"], v["a_component"])
                done = True
            else:
                done, _ = self.try_engine(self.source.refresh)
            if done:
                self.frame = None
                self.shown_time = frame.time
                shown = frame.kind == "steps"
                self._say_notice()
        if look.boxes:
            key = (self.last.steps_done if self.last else -1, tuple(look.box_levels))
            if key != self._boxes_key:
                done, found = self.try_engine(lambda: engine_boxes(self.engine, *look.box_levels))
                if done:
                    self.canvas.renderer.set_boxes(*(found or (None, None)))
                    self._boxes_key = key
        return shown

    def _say_notice(self) -> None:
        """Once, in the terminal, a drawing problem (the HUD shows it too)."""
        if self.source.notice and not self._notice_said:
            self._notice_said = True
            print(f"galaxyview: {self.source.notice}\n  ({self.source.failure})",
                  file=sys.stderr, flush=True)

    def fit_positions(self):
        """Positions to frame, or None while the worker is busy (GPU engine: a host copy)."""
        if self.host:
            return self.positions
        done, positions = self.try_engine(self.source.positions)
        return positions if done else None

    def close(self) -> None:
        """Release the interop buffer now; the worker closes the engine after its current step,
        off the GUI thread."""
        self.canvas.set_current()
        self.source.close()
        for signal in (self.changed, self.failed):  # the window's slots hold this session:
            _disconnect(signal)  # a cycle through Qt that Python's collector cannot see
        w = self.worker
        w.stop(close_engine=True)
        _retired.append(w)
        w.finished.connect(lambda: _forget(w))
        if w.isFinished():
            _forget(w)


def _disconnect(signal) -> None:
    try:
        signal.disconnect()
    except TypeError:  # nothing connected
        pass


def _forget(worker) -> None:
    """A retired worker has finished: drop it, and the slot that holds it (the lambda above;
    otherwise worker, engine and its device memory would live on)."""
    try:
        _retired.remove(worker)
    except ValueError:  # already gone
        pass
    _disconnect(worker.finished)


def wait_for_workers(timeout_ms: int = 60_000) -> bool:
    """Wait for the workers of ended sessions; True when all have finished."""
    import time

    deadline = time.perf_counter() + timeout_ms / 1e3
    for worker in list(_retired):
        if not worker.wait(max(0, int((deadline - time.perf_counter()) * 1e3))):
            return False
    return True
