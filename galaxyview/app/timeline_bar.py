"""The timeline bar under the canvas: a scrub bar over the kept states (engines/timeline.py),
what they cost in memory, and how many are kept how often. Dragging shows a state's time;
letting go rewinds to it (paused). Play then replays from there, as a new branch with the
theta, dt and eps set now."""
from __future__ import annotations

from PyQt6.QtCore import QSignalBlocker, Qt, pyqtSignal
from PyQt6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QSlider, QSpinBox, QWidget


class TimelineBar(QWidget):
    rewind = pyqtSignal(int)  # index of the kept state
    configured = pyqtSignal(int, int)  # capacity, every

    def __init__(self, capacity: int, every: int, parent=None):
        super().__init__(parent)
        self.times: tuple = ()
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 0, 4, 0)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("Timeline of kept states: drag and let go to rewind; Play "
                               "replays from there (a branch with the parameters set now)")
        self.slider.setEnabled(False)
        row.addWidget(self.slider, 1)
        self.label = QLabel("nothing kept yet")
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.label.setMinimumWidth(60)
        row.addWidget(self.label, 1)
        self.capacity = QSpinBox()
        self.capacity.setRange(1, 9999)
        self.capacity.setValue(capacity)
        self.capacity.setPrefix("keep ")
        self.capacity.setToolTip("States kept (the oldest goes first)")
        self.every = QSpinBox()
        self.every.setRange(1, 99999)
        self.every.setValue(every)
        self.every.setPrefix("every ")
        self.every.setSuffix(" st.")
        for box in (self.capacity, self.every):
            box.setKeyboardTracking(False)
            box.valueChanged.connect(
                lambda _: self.configured.emit(self.capacity.value(), self.every.value()))
            row.addWidget(box)
        self.slider.sliderMoved.connect(self._moving)
        self.slider.sliderReleased.connect(lambda: self.rewind.emit(self.slider.value()))
        self.slider.actionTriggered.connect(self._stepped)
        self.summary = ""

    def show_timeline(self, times: tuple, position: int | None, summary: str) -> None:
        """The worker's view of the timeline (each Frame carries it)."""
        self.times, self.summary = tuple(times), summary
        if self.slider.isSliderDown():
            return
        with QSignalBlocker(self.slider):
            self.slider.setEnabled(len(times) > 0)
            self.slider.setRange(0, max(len(times) - 1, 0))
            self.slider.setValue(len(times) - 1 if position is None else position)
        self._show(self.slider.value())

    def _show(self, i: int) -> None:
        t = f"t = {self.times[i]:.4g}   " if 0 <= i < len(self.times) else ""
        self.label.setText(f"{t}{self.summary}")

    def _moving(self, i: int) -> None:
        self._show(i)

    def _stepped(self, action) -> None:
        """Keys and clicks on the groove (not drags) rewind at once."""
        if not self.slider.isSliderDown() and action != QSlider.SliderAction.SliderMove:
            self.rewind.emit(self.slider.sliderPosition())
