"""Start the viewer: a Qt application with one window; --screenshot runs K frames and saves."""
from __future__ import annotations

import signal
import sys
import time
import traceback

from PyQt6.QtCore import QObject, QTimer, pyqtSignal
from PyQt6.QtWidgets import QApplication

from galaxyview import interrupt
from galaxyview.app import settings
from galaxyview.app.platform import opengl_problem
from galaxyview.app.window import MainWindow, ViewOptions, save_png, wait_for_workers
from galaxyview.errors import GalaxyviewError

DEFAULT_SCENES = ("antennae", "plummer")
SWITCH_INTERVAL_S = 5e-4  # the GIL's hand-over between the GUI and the worker (Python: 5 ms)


def default_source() -> str:
    from galaxyview.model.scene import shipped_scenes

    names = [name for name, _, _ in shipped_scenes()]
    for name in DEFAULT_SCENES:
        if name in names:
            return name
    if not names:
        raise GalaxyviewError("no scene given and no shipped scenes found; give a .toml scene "
                              "file or a snapshot file")
    return names[0]


class ScreenshotRun:
    """Plays until `frames` step batches have been drawn, then saves the canvas and closes."""

    def __init__(self, window: MainWindow, path, frames: int):
        self.window, self.path, self.frames = window, path, frames
        self.result = None  # 0 saved, 2 failed
        self._t0 = time.perf_counter()
        self._warm = min(10, frames // 4)  # frames/s counted after these (kernels, first tree)
        self._t_warm = self._t0 if self._warm == 0 else None
        self._timer = QTimer(window)
        self._timer.setInterval(10)
        self._timer.timeout.connect(self._check)
        self._timer.start()
        window.stop_at_frame = frames  # no batch beyond the K-th is posted
        window.set_playing(frames > 0)

    def _check(self) -> None:
        w = self.window
        if self._t_warm is None and w.step_frames >= self._warm:
            self._t_warm = time.perf_counter()
        if w.last_error is not None:  # the engine stopped
            print(f"galaxyview: error: {w.last_error}", file=sys.stderr)
            self._finish(2)
        elif w.step_frames >= self.frames and w.frame_shown:
            w.set_playing(False)
            try:
                save_png(self.path, w.canvas.render_image())
                counted = w.step_frames - self._warm
                rate = counted / max(time.perf_counter() - self._t_warm, 1e-9)
                cw, ch = w.canvas.physical_size
                split, last = w.canvas.clock.split(), w.session.last
                step = last.step_ms if last is not None else 0.0
                print(f"screenshot: {self.path} ({w.step_frames} frames, {rate:.1f} frames/s, "
                      f"{w.sim.engine.n} particles, {w.sim.why}, {w.session.source.path}, "
                      f"{cw}x{ch}; a frame: step {step:.2f} ms, draw {split.draw_ms:.2f} ms, "
                      f"wait {split.wait_ms:.2f} ms)")
                self._finish(0)
            except GalaxyviewError as exc:
                print(f"galaxyview: error: {exc}", file=sys.stderr)
                self._finish(2)

    def _finish(self, code: int) -> None:
        self._timer.stop()
        self.result = code
        self.window.close()


class _Reporter(QObject):
    """Hands an error raised on any thread (a worker's too) to the window on the GUI thread:
    widgets are made and parented there only."""

    report = pyqtSignal(str, str)  # title, text


def _report_unexpected(window, reporter: _Reporter):
    """PyQt aborts the process on an exception escaping a slot unless sys.excepthook is set:
    print the traceback (a bug to report) and tell the user in the window instead."""
    reporter.report.connect(window.show_error)

    def hook(kind, value, tb):
        traceback.print_exception(kind, value, tb)
        if isinstance(value, GalaxyviewError):
            reporter.report.emit("Error", str(value))
        else:
            reporter.report.emit("Unexpected error", f"{kind.__name__}: {value} (the traceback "
                                 "is in the terminal; please report it)")
    return hook


class QuitOnSignal:
    """Ctrl-C (SIGINT), SIGTERM and SIGHUP, each unless ignored (a background job, nohup), close the window like Ctrl+Q; `code` is then 128 + signal (130, 143, 129); on rank 0
    of an MPI job also the launcher's SIGUSR1, for the stop its note names (interrupt.py).
    Python runs signal handlers only between its own bytecodes, so a timer hands it control
    a few times a second while Qt's event loop runs."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)

    def __init__(self, window):
        self.window, self.code = window, None
        taken = [s for s in self.SIGNALS if callable(signal.getsignal(s)) or
                 (s != signal.SIGUSR1 and signal.getsignal(s) is signal.SIG_DFL)]
        self._previous = {s: signal.signal(s, self._handle) for s in taken}
        self._timer = QTimer()
        self._timer.setInterval(100)
        self._timer.timeout.connect(lambda: None)
        self._timer.start()

    def _handle(self, signum, _frame) -> None:
        if signum == signal.SIGUSR1:  # a stop the launcher passed on
            signum = interrupt.forwarded()
        if self.code is None:
            self.code = 128 + signum
            print(f"galaxyview: {signal.Signals(signum).name}: closing the window",
                  file=sys.stderr)
            QTimer.singleShot(0, self.window.close)  # from the event loop, not the handler
        elif not interrupt.held():  # a second signal while closing: stop waiting (rank 0 of
            raise KeyboardInterrupt  # an MPI job: the launcher ends the job)

    def restore(self) -> None:
        self._timer.stop()
        for s, handler in self._previous.items():
            signal.signal(s, handler)


def _announce(window: MainWindow, playing: bool) -> None:
    sim = window.sim
    state = "playing (space pauses)" if playing else "paused"
    print(f"galaxyview: {sim.name}: {sim.engine.n:,} particles, {sim.why}; "
          f"{window.steps_per_frame} step(s) per frame; {state}; Ctrl-C or Ctrl+Q quits",
          flush=True)


def _application() -> QApplication:
    """The QApplication, once Qt has shown it can give an OpenGL context. The worker thread
    launches a step's kernels in Python while the GUI thread draws: a short GIL switch
    interval keeps a paint from waiting the default 5 ms for its turn."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("galaxyview")
    app.setOrganizationName("galaxyview")
    problem = opengl_problem()
    if problem:
        raise GalaxyviewError(problem)
    return app


def _exec(app, window, quit_on: QuitOnSignal) -> int | None:
    """Run the event loop; the signal's exit code when a stop signal closed the window."""
    reporter = _Reporter()
    previous_hook, sys.excepthook = sys.excepthook, _report_unexpected(window, reporter)
    try:
        app.exec()
    finally:
        sys.excepthook = previous_hook
        quit_on.restore()
    wait_for_workers()
    return quit_on.code


def _audience_output(window, screen, decorate=None):
    """The audience output (app/audience.py) on `screen`, opened; None without a screen."""
    if screen is None or not window.isVisible():
        return None
    from galaxyview.app.audience import AudienceWindow

    output = AudienceWindow(window, screen)
    output.decorate = decorate
    output.open()
    return output


def _audience_screen(index: int | None):
    from galaxyview.app.audience import audience_screen

    return audience_screen(index) if index is not None else None


def run_window(options: ViewOptions, screenshot=None, frames: int = 10,
               audience: int | None = None) -> int:
    """Open the window on options.source, playing; returns the exit code (130 or 143 when
    closed by SIGINT or SIGTERM). Errors before the window opens (a bad scene, no GPU, no
    OpenGL, no screen `audience` for the audience output) raise GalaxyviewError."""
    app = _application()
    screen = _audience_screen(audience)
    window = MainWindow(options, settings.open_settings())
    try:
        window.open_source(options.source or window.settings_source() or default_source(),
                           options.n)
    except BaseException:
        window.close()
        wait_for_workers()
        raise
    quit_on = QuitOnSignal(window)  # (from here: before Qt's GL set-up, no place for a raise)
    window.show()
    if screenshot:
        run = ScreenshotRun(window, screenshot, frames)
    else:
        run = None
        window.set_playing(True)
        _announce(window, True)
    output = _audience_output(window, screen)
    try:
        code = _exec(app, window, quit_on)
    finally:
        if output is not None:
            output.close()
    last = window.final_frame
    if run is None and last is not None:
        print(f"galaxyview: closed after {last.steps_done} steps (t = {last.time:.4g} N-body)",
              flush=True)
    if code is not None:
        return code
    return run.result if run is not None and run.result is not None else 0


def run_show(options: ViewOptions, playlist, fullscreen: bool = True, items: int = 0,
             text_scale: float | None = None, audience: int | None = None) -> int:
    """Play `playlist` (model/playlist.py) until closed, or for `items` scenes; returns the
    exit code (1 when no scene of it could be opened). audience: the index of a screen for
    the audience output (app/audience.py), the window staying with the operator."""
    from galaxyview.app.show import ShowController

    app = _application()
    screen = _audience_screen(audience)
    window = MainWindow(options)
    show = ShowController(window, playlist, fullscreen, items, text_scale)
    count = len(playlist.items)
    print(f"galaxyview show: {count} scene{'s' * (count != 1)} from {playlist.source}; Space "
          f"holds the show, Right / Left skip a scene or go back, F11 toggles full screen; any "
          f"other key or a mouse move hands you the controls; Ctrl+Q or Ctrl-C quits", flush=True)
    quit_on = QuitOnSignal(window)
    show.start()
    output = _audience_output(window, screen, show.decorate)
    if not window.isVisible():  # nothing could be opened
        quit_on.restore()
        wait_for_workers()
        return 1
    try:
        code = _exec(app, window, quit_on)
    finally:
        if output is not None:
            output.close()
    if code is not None:
        return code
    return 0 if show.shown_items else 1
