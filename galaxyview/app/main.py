"""Start the viewer: a Qt application with one window; --screenshot runs K frames and saves."""
from __future__ import annotations

import sys
import time
import traceback

from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QApplication

from galaxyview.app.window import MainWindow, ViewOptions, save_png, wait_for_workers
from galaxyview.errors import GalaxyviewError

DEFAULT_SCENES = ("antennae", "plummer")


def default_source() -> str:
    from galaxyview.model.scene import shipped_scenes

    names = [name for name, _, _ in shipped_scenes()]
    for name in DEFAULT_SCENES:
        if name in names:
            return name
    if not names:
        raise GalaxyviewError("no scene given and no shipped scenes found; give a .toml scene "
                              "file or a Tipsy snapshot")
    return names[0]


class ScreenshotRun:
    """Plays until `frames` step batches have been drawn, then saves the canvas and closes."""

    def __init__(self, window: MainWindow, path, frames: int):
        self.window, self.path, self.frames = window, path, frames
        self.result = None  # 0 saved, 2 failed
        self._t0 = time.perf_counter()
        self._timer = QTimer(window)
        self._timer.setInterval(10)
        self._timer.timeout.connect(self._check)
        self._timer.start()
        window.set_playing(frames > 0)

    def _check(self) -> None:
        w = self.window
        if w.last_error is not None:  # the engine stopped
            print(f"galaxyview: error: {w.last_error}", file=sys.stderr)
            self._finish(2)
        elif w.step_frames >= self.frames and w.frame_shown:
            w.set_playing(False)
            try:
                save_png(self.path, w.canvas.render_image())
                rate = w.step_frames / (time.perf_counter() - self._t0)
                print(f"screenshot: {self.path} ({w.step_frames} frames, {rate:.1f} frames/s, "
                      f"{w.sim.engine.n} particles, {w.session.source.path})")
                self._finish(0)
            except GalaxyviewError as exc:
                print(f"galaxyview: error: {exc}", file=sys.stderr)
                self._finish(2)

    def _finish(self, code: int) -> None:
        self._timer.stop()
        self.result = code
        self.window.close()


def _report_unexpected(window):
    """PyQt aborts the process on an exception escaping a slot unless sys.excepthook is set:
    print the traceback (a bug to report) and tell the user in the window instead."""
    def hook(kind, value, tb):
        traceback.print_exception(kind, value, tb)
        if isinstance(value, GalaxyviewError):
            window.show_error("Error", str(value))
        else:
            window.show_error("Unexpected error", f"{kind.__name__}: {value} (the traceback is "
                              "in the terminal; please report it)")
    return hook


def run_window(options: ViewOptions, screenshot=None, frames: int = 10,
               steps_per_frame: int = 1) -> int:
    """Open the window on options.source; returns the exit code. Errors before the window
    opens (a bad scene, no GPU) raise GalaxyviewError."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("galaxyview")
    window = MainWindow(options)
    window.panel.steps_per_frame.setValue(steps_per_frame)
    try:
        window.open_source(options.source or default_source(), options.n)
    except BaseException:
        window.close()
        wait_for_workers()
        raise
    window.show()
    previous_hook, sys.excepthook = sys.excepthook, _report_unexpected(window)
    run = ScreenshotRun(window, screenshot, frames) if screenshot else None
    try:
        app.exec()
    finally:
        sys.excepthook = previous_hook
    wait_for_workers()
    return run.result if run is not None and run.result is not None else 0
