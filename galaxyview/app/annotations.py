"""The show's scale bar and galaxy names over the canvas (render/annotations.py: their
geometry; the same as `record --scale-bar --labels` burns in), painted by Qt in white with a
dark outline, as the captions read. The galaxies' centres are read from the engine only while
its worker is idle (Session.try_engine), once a new state is shown; the last ones meanwhile."""
from __future__ import annotations

from PyQt6.QtCore import QPointF, QRectF, Qt
from PyQt6.QtGui import QColor, QFont, QPainter, QPainterPath, QPen
from PyQt6.QtWidgets import QWidget

from galaxyview.model.units import in_seconds
from galaxyview.movie.recorder import galaxy_names
from galaxyview.render.annotations import (galaxy_centres, galaxy_labels, galaxy_selections,
                                           scale_bar)


class Annotations(QWidget):
    """Over the canvas widget; update_for(window) before each paint."""

    def __init__(self, canvas, labels: bool, bar: bool):
        super().__init__(canvas)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.want_labels, self.want_bar = labels, bar
        self.labels, self.bar = [], None
        self.text_px = 16
        self._sim = self._read_for = None
        self._galaxies, self.names, self.centres = [], [], []

    def update_for(self, window) -> None:
        """The bar and labels of the window's camera and newest state."""
        canvas, session, sim = self.parentWidget(), window.session, window.sim
        if session is None or sim is None:
            self.hide()
            return
        if sim is not self._sim:  # a new scene
            self._sim, self._read_for, self.centres = sim, None, []
            galaxies, self.names = galaxy_names(sim) if self.want_labels else ([], [])
            self._galaxies = galaxy_selections(galaxies)
        if self._galaxies and session.last is not self._read_for:
            done, centres = session.try_engine(lambda: galaxy_centres(sim.engine,
                                                                      self._galaxies))
            if done:
                self.centres, self._read_for = centres, session.last
        size = (canvas.width(), canvas.height())
        camera = window.canvas.camera
        self.bar = (scale_bar(camera, size, sim.units, in_seconds(sim.engine.params.G))
                    if self.want_bar else None)
        self.labels = galaxy_labels(camera, size, self.centres, self.names)
        self.text_px = round(max(14, canvas.height() // 40) * window.text_scale)
        if (self.width(), self.height()) != size:
            self.setGeometry(0, 0, *size)
        if self.isHidden():
            self.show()
            self.raise_()
        self.update()

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        font = QFont(self.font())
        font.setPixelSize(self.text_px)
        p.setFont(font)
        metrics = p.fontMetrics()
        margin = self.text_px // 2
        if self.bar is not None:
            thick = max(2, self.height() // 270)
            x1, y1 = self.width() - margin, self.height() - margin
            rect = QRectF(x1 - self.bar.pixels, y1 - thick, self.bar.pixels, thick)
            p.setPen(QPen(QColor(0, 0, 0, 200), 2))
            p.setBrush(QColor("white"))
            p.drawRect(rect)
            width = metrics.horizontalAdvance(self.bar.text)
            self._text(p, QPointF(min(rect.center().x() - width / 2, x1 - width),
                                  rect.top() - margin / 2 - metrics.descent()), self.bar.text)
        tick = max(3, self.text_px // 4)
        for label in self.labels:
            x, y = label.x, label.y
            p.setPen(QPen(QColor("white"), 1.5))
            p.drawLine(QPointF(x - tick, y), QPointF(x + tick, y))
            p.drawLine(QPointF(x, y - tick), QPointF(x, y + tick))
            width = metrics.horizontalAdvance(label.text)
            self._text(p, QPointF(x - width / 2, y - 2 * tick - metrics.descent()), label.text)
        p.end()

    def _text(self, p: QPainter, at: QPointF, text: str) -> None:
        """White text with a dark outline, its baseline's left end at `at`."""
        path = QPainterPath()
        path.addText(at, p.font(), text)
        p.setPen(QPen(QColor(0, 0, 0, 200), 3))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawPath(path)
        p.fillPath(path, QColor("white"))
