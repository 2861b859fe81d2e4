"""The control panel: scene, physics, playback, camera and look controls (layout only; the
window connects them). The controls come from the control table (app/control_table.py)."""
from __future__ import annotations

from PyQt6.QtWidgets import (QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                             QPushButton, QSpinBox, QVBoxLayout, QWidget)

from galaxyview.app import control_table
from galaxyview.app.controls import make
from galaxyview.app.keyframes import KeyframeBox
from galaxyview.render.look import Look

N_MAX = 2**28


def _group(title: str, parent_layout) -> QFormLayout:
    box = QGroupBox(title)
    form = QFormLayout(box)
    parent_layout.addWidget(box)
    return form


class ControlPanel(QWidget):
    """The controls of `table` (app/control_table.py) are attributes by their names and in
    `controls`; the buttons, labels and the scene's count are made here."""

    def __init__(self, look: Look, table=None, parent=None):
        super().__init__(parent)
        self.table = control_table.CONTROLS if table is None else table
        control_table.check(self.table)
        self.look = look
        self.controls: dict = {}
        self._lines: dict = {}
        self.setMinimumWidth(300)
        layout = QVBoxLayout(self)

        form = _group("Scene", layout)
        self.scene = QComboBox()
        self.open = QPushButton("Open…")
        self.open.setToolTip("Open a .toml scene file, a snapshot or an archive (Ctrl+O)")
        row = QHBoxLayout()
        row.addWidget(self.scene, 1)
        row.addWidget(self.open)
        form.addRow("Scene", row)
        self.n = QSpinBox()
        self.n.setRange(1, N_MAX)
        self.n.setGroupSeparatorShown(True)
        self.n.setKeyboardTracking(False)
        self.n.setToolTip("Particle count; the scene is built again with it")
        form.addRow("Particles", self.n)
        self.engine = QLabel("–")
        self.engine.setWordWrap(True)
        form.addRow("Engine", self.engine)
        self.reset = QPushButton("Reset")
        self.reset.setToolTip("Back to the initial state (Ctrl+R)")
        form.addRow(self.reset)

        form = _group("Physics (takes effect on the next step)", layout)
        self.modules = QLabel("–")
        self.modules.setWordWrap(True)
        self.modules.setToolTip("The engine's integrator, boundary and collision modules")
        form.addRow("Modules", self.modules)
        self._rows(form, "physics")

        form = self.ring_form = _group("Ring (shearing sheet)", layout)
        line = self._line("ring views")
        self.view_top, self.view_edge = QPushButton("Top"), QPushButton("Edge-on")
        line.addWidget(self.view_top)
        line.addWidget(self.view_edge)
        self._rows(form, "ring")
        form.addRow(line)
        form.parentWidget().setVisible(False)  # shown for ring scenes

        form = _group("Run", layout)
        row = QHBoxLayout()
        self.play = QPushButton("Play")
        self.play.setCheckable(True)
        self.play.setToolTip("Play / pause (Space)")
        self.step = QPushButton("Step")
        self.step.setToolTip("One step (N)")
        row.addWidget(self.play)
        row.addWidget(self.step)
        form.addRow(row)
        self._rows(form, "run")

        form = _group("Camera", layout)
        line = self._line("camera")
        self.fit = QPushButton("Fit")
        self.fit.setToolTip("Frame the particles (F)")
        line.addWidget(self.fit)
        self._rows(form, "camera")
        form.addRow(line)
        form.addRow(QLabel("drag: orbit · right/shift drag: pan · wheel: zoom"))
        self.keyframes = KeyframeBox()
        layout.addWidget(self.keyframes)

        form = _group("Look", layout)
        line = self._line("boxes")
        self._rows(form, "look")
        form.addRow(line)

        self.record = QPushButton("Record…")
        self.record.setCheckable(True)
        self.record.setToolTip("Record the canvas into an mp4 movie (Ctrl+M)")
        layout.addWidget(self.record)
        layout.addStretch(1)

    def _line(self, name: str) -> QHBoxLayout:
        self._lines[name] = line = QHBoxLayout()
        return line

    def _rows(self, form: QFormLayout, group: str) -> None:
        """The table's rows of `group`: a form row each, or onto their named line."""
        for row in self.table:
            if row.group != group:
                continue
            w = self.controls[row.name] = make(row, self.look)
            setattr(self, row.name, w)
            line = self._lines.get(row.line)
            if line is None and row.kind == "check":
                form.addRow(w)
            elif line is None:
                form.addRow(row.label, w)
            elif row.kind == "check":
                line.addWidget(w)
            else:
                line.addWidget(QLabel(row.label))
                line.addWidget(w)
