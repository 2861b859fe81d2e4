"""The colour bar over the canvas: the colour map with the values at its ends, or swatches of
the galaxies or components, for the look's colour mode (the colours are render/look.py's)."""
from __future__ import annotations

import numpy as np
from PyQt6.QtCore import Qt
from PyQt6.QtGui import QColor, QImage, QPainter
from PyQt6.QtWidgets import QWidget

from galaxyview.model.state import Component
from galaxyview.render.colour import LABELS
from galaxyview.render.look import (COMPONENT_COLOURS, GALAXY_COLOURS, POPULATION_COLOURS,
                                    colour_lut, mode_code)

WIDTH, BAR_H, PAD = 240, 12, 6


def _qcolour(rgb) -> QColor:
    r, g, b = (int(round(255 * min(max(float(c), 0.0), 1.0))) for c in rgb[:3])
    return QColor(r, g, b)


class ColourBar(QWidget):
    """Call show_for() with what the canvas draws; it places itself at the bottom right."""

    def __init__(self, parent):
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.title = ""
        self.ends = ("", "")
        self.swatches: list[tuple[str, tuple]] = []
        self._image = None
        self._key = None

    def show_for(self, mode: str, colour_map: str, value_range, galaxies=()) -> None:
        key = (mode, colour_map, tuple(value_range or ()), tuple(galaxies))
        if key != self._key:
            self._key = key
            self.title = LABELS.get(mode, mode)
            code = mode_code(mode)
            if code == 2:
                lut = (colour_lut(colour_map) * 255).round().astype(np.uint8)
                row = np.ascontiguousarray(np.repeat(lut[None], BAR_H, axis=0))
                self._rows = row  # QImage keeps a pointer to it
                self._image = QImage(row.data, row.shape[1], BAR_H, 3 * row.shape[1],
                                     QImage.Format.Format_RGB888)
                lo, hi = value_range
                self.ends = (f"{lo:.3g}", f"{hi:.3g}")
                self.swatches = []
            else:
                self._image, self.ends = None, ("", "")
                if code == 1:
                    names = list(galaxies) or ["galaxy 0", "galaxy 1"]
                    self.swatches = [(name, GALAXY_COLOURS[i % 8]) for i, name in
                                     enumerate(names)]
                else:
                    colours = POPULATION_COLOURS if code == 3 else COMPONENT_COLOURS
                    self.swatches = [(c.name.lower().replace("_", " "), colours[c])
                                     for c in Component if c in colours]
            rows = 1 if self._image is not None else (len(self.swatches) + 2) // 3
            self.resize(WIDTH, 2 * PAD + 14 + rows * (BAR_H + 16))
        parent = self.parentWidget()
        self.move(parent.width() - self.width() - 8, parent.height() - self.height() - 8)
        self.show()
        self.update()

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(0, 0, 0, 140))
        p.setPen(QColor(232, 240, 255))
        font = p.font()
        font.setPixelSize(11)
        p.setFont(font)
        p.drawText(PAD, PAD + 10, self.title)
        top = PAD + 16
        if self._image is not None:
            p.drawImage(PAD, top, self._image.scaled(WIDTH - 2 * PAD, BAR_H))
            p.drawText(PAD, top + BAR_H + 13, self.ends[0])
            hi = self.ends[1]
            p.drawText(WIDTH - PAD - p.fontMetrics().horizontalAdvance(hi), top + BAR_H + 13,
                       hi)
        else:
            col_w = (WIDTH - 2 * PAD) // 3
            for i, (name, rgb) in enumerate(self.swatches):
                x, y = PAD + (i % 3) * col_w, top + (i // 3) * (BAR_H + 16)
                p.fillRect(x, y + 2, BAR_H, BAR_H, _qcolour(rgb))
                p.drawText(x + BAR_H + 4, y + BAR_H, name)
        p.end()
