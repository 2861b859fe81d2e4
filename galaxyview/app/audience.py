"""The audience output: a second, full-screen window on another screen (a projector) showing
the canvas's view, while the operator's window keeps the canvas, the panel and the HUD.

The canvas stays where it is (moving a GL widget into another top-level window gives it a new
GL context, which its renderer's objects do not survive): after each paint the same view is
drawn again at the audience screen's size into an offscreen buffer (ViewerCanvas.render_image)
and shown in a frameless full-screen window there. That costs a second draw and a read-back a
frame. Qt widgets over the operator's canvas (the HUD, the show's captions, names and scale
bar) are not in that picture; `decorate(rgb)`, when set, draws over it in numpy (for example
movie/caption.py's draw_caption). The window's Record button records this picture
(`current()`, app/recording.py) while an audience output is open."""
from __future__ import annotations

import numpy as np
from PyQt6.QtCore import QEvent, Qt
from PyQt6.QtGui import QGuiApplication, QImage, QPixmap
from PyQt6.QtWidgets import QLabel, QVBoxLayout, QWidget

from galaxyview.errors import GalaxyviewError


def audience_screen(index: int = 1):
    """The screen the audience output goes to: QGuiApplication.screens()[index];
    GalaxyviewError naming the screens there are when there is no such screen."""
    screens = QGuiApplication.screens()
    if not 0 <= index < len(screens):
        names = ", ".join(f"{i}: {s.name()} {s.geometry().width()}x{s.geometry().height()}"
                          for i, s in enumerate(screens))
        raise GalaxyviewError(f"no screen {index} for the audience output; the screens are "
                              f"{names or 'none'} (connect the projector, or choose another)")
    return screens[index]


class AudienceWindow(QWidget):
    """Full screen, without a frame or cursor, on `screen` (a QScreen, or anything with its
    geometry() and devicePixelRatio()); shows `window.canvas`'s view drawn at that screen's
    pixels after each paint of the canvas; it closes with the operator's window. While open it
    is `window.audience`, which the Record button records. close() gives the canvas back its
    own after_draw."""

    def __init__(self, window, screen):
        super().__init__(None, Qt.WindowType.Window | Qt.WindowType.FramelessWindowHint)
        self.setWindowTitle("galaxyview (audience)")
        self.setCursor(Qt.CursorShape.BlankCursor)
        self.setStyleSheet("background: black;")
        self.canvas = window.canvas
        self.decorate = None  # (rgb) -> None: drawn over each picture
        self.frames = 0  # pictures shown
        self._rgb = None  # the last picture (QImage keeps a pointer to it)
        geometry = screen.geometry()
        ratio = float(screen.devicePixelRatio())
        self.size_px = (max(16, round(geometry.width() * ratio)),
                        max(16, round(geometry.height() * ratio)))
        self.picture = QLabel(self)
        self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.picture.setScaledContents(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.picture)
        if isinstance(screen, type(QGuiApplication.primaryScreen())):
            self.setScreen(screen)
        self.setGeometry(geometry)
        self._chained = self.canvas.after_draw
        self.canvas.after_draw = self._after_draw
        self._operator = window
        window.audience = self
        window.installEventFilter(self)

    def open(self) -> None:
        self.showFullScreen()

    def _after_draw(self) -> None:
        if self._chained is not None:
            self._chained()
        if self.isVisible():
            self._draw()

    def current(self) -> np.ndarray:
        """What the audience sees: the last picture shown, or one drawn now when there is none;
        (h, w, 3) uint8 of size_px."""
        if self._rgb is None:
            self._draw()
        return self._rgb

    def _draw(self) -> None:
        rgb = self.canvas.render_image(self.size_px)
        if self.decorate is not None:
            self.decorate(rgb)
        self._rgb = np.ascontiguousarray(rgb)
        h, w = self._rgb.shape[:2]
        image = QImage(self._rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888)
        self.picture.setPixmap(QPixmap.fromImage(image))
        self.frames += 1

    def eventFilter(self, obj, event) -> bool:
        if obj is self._operator and event.type() == QEvent.Type.Close:
            self.close()
        return False

    def closeEvent(self, event) -> None:
        if self.canvas.after_draw == self._after_draw:
            self.canvas.after_draw = self._chained
        self._operator.removeEventFilter(self)
        if self._operator.audience is self:
            self._operator.audience = None
        super().closeEvent(event)
