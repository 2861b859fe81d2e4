"""Movies and screenshots of the canvas, and the window's slots that make them.

A movie is recorded at a fixed frame rate on the wall clock: when the window draws slower than
the movie's rate, the last image is repeated, so movie time stays real time whatever the UI
frame rate is. While a show has an audience output (app/audience.py), the movie is what the
audience sees, at its screen's size: the pictures that output shows, not a draw of its own."""
from __future__ import annotations

import os
import time
from pathlib import Path

from PyQt6.QtCore import QObject, QTimer
from PyQt6.QtWidgets import QFileDialog

from galaxyview.errors import GalaxyviewError
from galaxyview.files import safe_name, temp_beside


def movie_available() -> str | None:
    """None when movies can be written; otherwise why not."""
    try:
        from galaxyview.movie.encoder import MovieWriter  # noqa: F401
    except ImportError as exc:
        return f"the movie encoder is not available ({exc})"
    return None


def even_size(size) -> tuple[int, int]:
    """H.264 wants even sides."""
    w, h = (int(v) for v in size)
    return max(w - w % 2, 16), max(h - h % 2, 16)


class CanvasRecorder(QObject):
    """Records `canvas` at its size, or with `audience` (an AudienceWindow) the audience output's
    pictures at theirs (cut to even sides)."""

    def __init__(self, canvas, path, fps: int = 30, overwrite: bool = False, parent=None,
                 audience=None):
        super().__init__(parent)
        from galaxyview.movie.encoder import MovieWriter

        self.canvas, self.audience = canvas, audience
        self.fps = int(fps)
        self.size = even_size(canvas.physical_size if audience is None else audience.size_px)
        self.what = f"{self.size[0]}x{self.size[1]} {'window' if audience is None else 'audience'}"
        self.writer = MovieWriter(path, fps=self.fps, size=self.size, overwrite=overwrite)
        self.frames = 0
        self._t0 = time.perf_counter()
        self._timer = QTimer(self)
        self._timer.setInterval(max(1, round(1000 / self.fps)))
        self._timer.timeout.connect(self.capture)
        self._timer.start()
        self.capture()

    def capture(self) -> None:
        due = int((time.perf_counter() - self._t0) * self.fps) + 1
        if due <= self.frames:
            return
        if self.audience is None:
            rgb = self.canvas.render_image(self.size)
        else:
            rgb = self.audience.current()[:self.size[1], :self.size[0]]
        while self.frames < due:
            self.writer.add_frame(rgb)
            self.frames += 1

    def stop(self):
        """Finish the movie; returns its path."""
        self._timer.stop()
        return self.writer.close()


def save_png(path, rgb) -> Path:
    import imageio.v3 as iio

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise GalaxyviewError(f"{path}: screenshots are PNG files; give a name ending in .png")
    if not path.parent.is_dir():
        raise GalaxyviewError(f"{path}: the folder {path.parent} does not exist; create it first")
    try:  # a temporary file renamed into place: a failed write leaves the old file
        with temp_beside(path) as (tmp, f):
            iio.imwrite(f, rgb, extension=".png")
            f.close()
            os.replace(tmp, path)
    except OSError as exc:
        raise GalaxyviewError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    return path


def suggested_name(source, suffix: str) -> str:
    """A save dialog's first file name: the scene's or file's name (files.safe_name)."""
    return safe_name(Path(str(source)).stem if source else "") + suffix


class RecordingActions:
    """MainWindow's record and screenshot slots (mixed into MainWindow)."""

    def record_clicked(self) -> None:
        if self.recorder is not None:
            self.stop_recording()
            return
        path, _ = QFileDialog.getSaveFileName(self, "Record a movie",
                                              suggested_name(self.source_name, ".mp4"),
                                              "H.264 movies (*.mp4)")
        if path:
            self.start_recording(path, overwrite=True)  # the dialog asked about replacing
        self._show_recording()

    def start_recording(self, path, fps: int = 30, overwrite: bool = False) -> bool:
        try:
            self.recorder = CanvasRecorder(self.canvas, path, fps, overwrite, self, self.audience)
        except GalaxyviewError as exc:
            self.show_error("Cannot record", str(exc))
            self.recorder = None
        self._show_recording()
        return self.recorder is not None

    def stop_recording(self):
        """Finish the movie; returns its path (None when nothing was being recorded)."""
        rec, self.recorder = self.recorder, None
        path = None
        if rec is not None:
            try:
                path = rec.stop()
                self.statusBar().showMessage(f"movie written: {path} ({rec.frames} frames)", 8000)
            except GalaxyviewError as exc:
                self.show_error("Recording failed", str(exc))
        self._show_recording()
        return path

    def _show_recording(self) -> None:
        on = self.recorder is not None  # the HUD and the button say what is recorded
        self.panel.record.setChecked(on)
        self.panel.record.setText(f"Stop recording ({self.recorder.what})" if on else "Record…")

    def screenshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save a screenshot",
                                              suggested_name(self.source_name, ".png"),
                                              "PNG images (*.png)")
        if path:
            try:
                save_png(path, self.canvas.render_image())
            except GalaxyviewError as exc:
                self.show_error("Cannot save the screenshot", str(exc))
