"""Records what the canvas shows into a movie at a fixed frame rate, on the wall clock: when the
window draws slower than the movie's rate, the last image is repeated, so movie time stays real
time whatever the UI frame rate is."""
from __future__ import annotations

import time

from PyQt6.QtCore import QObject, QTimer


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
    def __init__(self, canvas, path, fps: int = 30, overwrite: bool = False, parent=None):
        super().__init__(parent)
        from galaxyview.movie.encoder import MovieWriter

        self.canvas = canvas
        self.fps = int(fps)
        self.size = even_size(canvas.physical_size)
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
        rgb = self.canvas.render_image(self.size)
        while self.frames < due:
            self.writer.add_frame(rgb)
            self.frames += 1

    def stop(self):
        """Finish the movie; returns its path."""
        self._timer.stop()
        return self.writer.close()

    def abort(self) -> None:
        self._timer.stop()
        self.writer.abort()
