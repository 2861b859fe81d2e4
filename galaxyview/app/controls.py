"""The widget of a control-table row (app/control_table.py): a slider plus spin box for one
number (NumberControl, on a linear or logarithmic slider scale), a spin box, a combo box or a
check box; one way to make, read, show and follow each."""
from __future__ import annotations

import math

from PyQt6.QtCore import QSignalBlocker, Qt, pyqtSignal
from PyQt6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QSlider, QSpinBox,
                             QWidget)

SLIDER_STEPS = 1000


class NumberControl(QWidget):
    """A spin box (the value) and a slider (a quick way to it). `committed` fires with the new
    value once the user settles: Enter or focus out in the box, release of the slider, or a
    slider key step. On a log scale the slider's lowest position means `zero_at_min` (e.g. 0)."""

    committed = pyqtSignal(float)

    def __init__(self, lo: float, hi: float, value: float, decimals: int = 3, log: bool = False,
                 zero_at_min: bool = False, suffix: str = "", parent=None):
        super().__init__(parent)
        self.lo, self.hi, self.log, self.zero_at_min = lo, hi, log, zero_at_min
        self.decimals = decimals
        self.spin = QDoubleSpinBox()
        self.spin.setDecimals(decimals)
        self.spin.setRange(0.0 if zero_at_min else lo, hi)
        self.spin.setSingleStep(10 ** -(decimals - 1) if decimals else 1)
        self.spin.setKeyboardTracking(False)
        self.spin.setSuffix(suffix)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 3)
        layout.addWidget(self.spin, 2)
        self.set_value(value)
        self.spin.valueChanged.connect(self._spin_changed)
        self.slider.valueChanged.connect(self._slider_moved)
        self.slider.sliderReleased.connect(self._slider_released)

    # slider position <-> value
    def to_slider(self, value: float) -> int:
        if self.log:
            if value <= self.lo:
                return 0
            t = math.log(value / self.lo) / math.log(self.hi / self.lo)
        else:
            t = (value - self.lo) / (self.hi - self.lo)
        return round(min(max(t, 0.0), 1.0) * SLIDER_STEPS)

    def from_slider(self, pos: int) -> float:
        t = pos / SLIDER_STEPS
        if self.log:
            if pos == 0 and self.zero_at_min:
                return 0.0
            return self.lo * (self.hi / self.lo) ** t
        return self.lo + t * (self.hi - self.lo)

    def value(self) -> float:
        return self.spin.value()

    def set_range(self, lo: float, hi: float) -> None:
        """New ends (a scene in other units); the value shown is kept within them."""
        self.lo, self.hi = lo, hi
        with QSignalBlocker(self.spin):
            self.spin.setRange(0.0 if self.zero_at_min else lo, hi)
        self.set_value(min(max(self.value(), lo), hi))

    def set_value(self, value: float) -> None:
        """Show `value` without committing it; the box's range and decimals widen to hold a
        value set beyond them (a scene's, the command line's), and narrow back after."""
        with QSignalBlocker(self.spin), QSignalBlocker(self.slider):
            lo = 0.0 if self.zero_at_min else self.lo
            self.spin.setRange(min(lo, value), max(self.hi, value))
            small = 0 < value < 10 ** -self.decimals
            self.spin.setDecimals(min(10, 1 - math.floor(math.log10(value))) if small
                                  else self.decimals)
            self.spin.setValue(value)
            self.slider.setValue(self.to_slider(value))

    def _spin_changed(self, value: float) -> None:
        with QSignalBlocker(self.slider):
            self.slider.setValue(self.to_slider(value))
        self.committed.emit(value)

    def _slider_moved(self, pos: int) -> None:
        with QSignalBlocker(self.spin):
            self.spin.setValue(self.from_slider(pos))
        if not self.slider.isSliderDown():  # keys and clicks on the groove commit at once
            self.committed.emit(self.spin.value())

    def _slider_released(self) -> None:
        self.committed.emit(self.spin.value())


def make(row, look) -> QWidget:
    """The widget of `row` showing its start value (a Look's field, or the row's default)."""
    value = row.start(look)
    if row.kind == "slider":
        w = NumberControl(*row.range, value, decimals=row.decimals, log=row.log,
                          zero_at_min=row.zero_at_min)
    elif row.kind == "spin":
        w = QSpinBox()
        w.setRange(*row.range)
        w.setSingleStep(row.step)
        w.setKeyboardTracking(False)
        w.setValue(value)
    elif row.kind == "combo":
        w = QComboBox()
        w.addItems(row.choices)
        w.setCurrentText(value)
    else:
        w = QCheckBox(row.label)
        w.setChecked(bool(value))
    w.setToolTip(row.tooltip)
    return w


def changed(w):
    """The signal carrying a widget's new value once the user settles on it."""
    if isinstance(w, NumberControl):
        return w.committed
    if isinstance(w, QSpinBox):
        return w.valueChanged
    if isinstance(w, QComboBox):
        return w.currentTextChanged
    return w.toggled


def value(w):
    if isinstance(w, (NumberControl, QSpinBox)):
        return w.value()
    if isinstance(w, QComboBox):
        return w.currentText()
    return w.isChecked()


def show(w, v) -> None:
    """Show value `v` without emitting the widget's signal."""
    if isinstance(w, NumberControl):
        w.set_value(v)
        return
    with QSignalBlocker(w):
        if isinstance(w, QSpinBox):
            w.setValue(v)
        elif isinstance(w, QComboBox):
            w.setCurrentText(v)
        else:
            w.setChecked(bool(v))
