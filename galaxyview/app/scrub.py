"""The scrub bar: a slider over the snapshots of a stored run played back (an archive opened
in the window); hidden for a simulation."""
from __future__ import annotations

from PyQt6.QtCore import QSignalBlocker, Qt
from PyQt6.QtWidgets import QSlider


class ScrubBar(QSlider):
    def __init__(self, parent=None):
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.session = None
        self.setToolTip("Stored snapshots: drag to move through the run")
        self.valueChanged.connect(self._moved)
        self.hide()

    def attach(self, session) -> None:
        """Show the bar for a session that plays back, with one position a snapshot."""
        self.session = session
        count = session.engine.frame_count
        self.setVisible(count is not None)
        if count is not None:
            with QSignalBlocker(self):
                self.setRange(0, count - 1)
                self.setValue(0)

    def follow(self, session) -> None:
        """After a frame: the bar at the snapshot shown (when the engine is free)."""
        if session is not self.session or not self.isVisible() or self.isSliderDown():
            return
        done, index = session.try_engine(lambda: session.engine.frame_index)
        if done and index is not None:
            with QSignalBlocker(self):
                self.setValue(index)

    def _moved(self, value: int) -> None:
        if self.session is not None:
            self.session.worker.seek(value)
