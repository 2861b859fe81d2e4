"""Live plot of the relative energy error against simulation time, with markers where theta,
dt or the softening changed."""
from __future__ import annotations

from PyQt6.QtCore import QPointF, Qt
from PyQt6.QtGui import QColor, QPainter, QPen, QPolygonF
from PyQt6.QtWidgets import QWidget

MAX_POINTS = 4000


class EnergyPlot(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumHeight(110)
        self.points: list[tuple[float, float]] = []  # (time, dE/E)
        self.markers: list[tuple[float, str]] = []  # (time, what changed)

    def clear(self) -> None:
        self.points.clear()
        self.markers.clear()
        self.update()

    def truncate(self, t: float) -> None:
        """Forget what came after time t (a rewind: the plot follows the new branch)."""
        self.points = [p for p in self.points if p[0] <= t]
        self.markers = [m for m in self.markers if m[0] <= t]
        self.update()

    def add_point(self, t: float, error: float) -> None:
        self.points.append((t, error))
        if len(self.points) > MAX_POINTS:  # keep the whole run at half resolution
            self.points = self.points[::2]
        self.update()

    def add_marker(self, t: float, label: str) -> None:
        self.markers.append((t, label))
        self.update()

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        w, h = self.width(), self.height()
        p.fillRect(0, 0, w, h, QColor(12, 14, 22))
        p.setPen(QColor(150, 160, 180))
        if not self.points:
            p.drawText(8, 16, "dE/E: no data yet")
            return
        ts = [t for t, _ in self.points] + [t for t, _ in self.markers]
        t0, t1 = min(ts), max(ts)
        span = max(t1 - t0, 1e-12)
        emax = max(max(abs(e) for _, e in self.points), 1e-12)
        left, top, right, bottom = 6, 18, w - 6, h - 6

        def x(t):
            return left + (t - t0) / span * (right - left)

        def y(e):
            return (top + bottom) / 2 - e / emax * (bottom - top) / 2

        p.setPen(QPen(QColor(60, 66, 84), 1))
        p.drawLine(QPointF(left, y(0)), QPointF(right, y(0)))
        p.setPen(QPen(QColor(255, 190, 80), 1, Qt.PenStyle.DashLine))
        for t, label in self.markers:
            p.drawLine(QPointF(x(t), top), QPointF(x(t), bottom))
            p.drawText(QPointF(x(t) + 2, bottom - 2), label)
        p.setPen(QPen(QColor(120, 200, 255), 1.5))
        p.drawPolyline(QPolygonF([QPointF(x(t), y(e)) for t, e in self.points]))
        p.setPen(QColor(190, 200, 220))
        p.drawText(6, 13, f"dE/E  ±{emax:.1e}   last {self.points[-1][1]:+.2e}")
        p.end()
