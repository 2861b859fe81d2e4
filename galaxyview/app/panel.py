"""The control panel: scene, physics, playback, camera and look controls (layout only; the
window connects them)."""
from __future__ import annotations

from PyQt6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                             QPushButton, QSpinBox, QVBoxLayout, QWidget)

from galaxyview.app.controls import NumberControl
from galaxyview.app.keyframes import KeyframeBox
from galaxyview.model.params import THETA_MAX
from galaxyview.model.sheet import RESTITUTION_LAWS
from galaxyview.render.look import COLOUR_MAPS, COLOUR_MODES, MAX_TREE_LEVEL, TONE_MAPS, Look

N_MAX = 2**28


def _group(title: str, parent_layout) -> QFormLayout:
    box = QGroupBox(title)
    form = QFormLayout(box)
    parent_layout.addWidget(box)
    return form


class ControlPanel(QWidget):
    def __init__(self, look: Look, parent=None):
        super().__init__(parent)
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
        self.theta = NumberControl(0.05, THETA_MAX, 0.75, decimals=3)
        self.theta.setToolTip("Opening angle: smaller is more accurate and slower")
        form.addRow("θ", self.theta)
        self.dt = NumberControl(1e-5, 0.5, 1 / 64, decimals=6, log=True)
        self.dt.setToolTip("Time step (N-body units; seconds for ring scenes): the shared "
                           "step, or the largest one (dt_max) with individual time steps")
        form.addRow("dt", self.dt)
        self.eta = NumberControl(1e-3, 1.0, 0.02, decimals=4, log=True)
        self.eta.setToolTip("Accuracy of individual time steps (leapfrog-hier, Hermite): "
                            "smaller gives smaller steps, more accurate and slower")
        form.addRow("η", self.eta)
        self.eps = NumberControl(1e-4, 2.0, 0.05, decimals=4, log=True, zero_at_min=True)
        self.eps.setToolTip("Plummer softening length (N-body units)")
        form.addRow("ε", self.eps)
        self.accuracy = QCheckBox("Force error readout")
        self.accuracy.setChecked(True)
        self.accuracy.setToolTip("Tree force error against direct summation on a random "
                                 "sample, live in the HUD (a few times a second at most)")
        form.addRow(self.accuracy)

        form = self.ring_form = _group("Ring (shearing sheet)", layout)
        self.restitution = QComboBox()
        self.restitution.addItems(RESTITUTION_LAWS)
        self.restitution.setToolTip("Normal coefficient of restitution: constant ε_n, or "
                                    "Bridges et al. (1984): (v_n / v_c)^-0.234, at most 1")
        form.addRow("Restitution", self.restitution)
        self.eps_n = NumberControl(0.0, 1.0, 0.5, decimals=2)
        self.eps_n.setToolTip("The constant coefficient of restitution")
        form.addRow("ε_n", self.eps_n)
        self.optical_depth = NumberControl(0.05, 2.0, 0.5, decimals=2)
        self.optical_depth.setToolTip("Optical depth: the scene is built again with it")
        form.addRow("Optical depth", self.optical_depth)
        row = QHBoxLayout()
        self.view_top, self.view_edge = QPushButton("Top"), QPushButton("Edge-on")
        self.ghosts = QCheckBox("Ghost boxes")
        self.ghosts.setToolTip("Draw the 8 neighbouring images of the box too")
        row.addWidget(self.view_top)
        row.addWidget(self.view_edge)
        row.addWidget(self.ghosts)
        form.addRow(row)
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
        self.steps_per_frame = QSpinBox()
        self.steps_per_frame.setRange(1, 1000)
        self.steps_per_frame.setKeyboardTracking(False)
        form.addRow("Steps per frame", self.steps_per_frame)

        form = _group("Camera", layout)
        row = QHBoxLayout()
        self.fit = QPushButton("Fit")
        self.fit.setToolTip("Frame the particles (F)")
        self.fly = QCheckBox("Fly")
        self.fly.setToolTip("Fly mode: drag looks around, W/A/S/D/Q/E move (G)")
        self.auto_orbit = QCheckBox("Turn")
        self.auto_orbit.setToolTip("Turn slowly about the vertical axis (T)")
        row.addWidget(self.fit)
        row.addWidget(self.fly)
        row.addWidget(self.auto_orbit)
        form.addRow(row)
        form.addRow(QLabel("drag: orbit · right/shift drag: pan · wheel: zoom"))
        self.keyframes = KeyframeBox()
        layout.addWidget(self.keyframes)

        form = _group("Look", layout)
        self.point_size = NumberControl(0.5, 16.0, look.point_size, decimals=1)
        form.addRow("Point size", self.point_size)
        self.exposure = NumberControl(0.01, 100.0, look.exposure, decimals=2, log=True)
        form.addRow("Exposure", self.exposure)
        self.colour = QComboBox()
        self.colour.addItems(COLOUR_MODES)
        self.colour.setToolTip("Colour by component, galaxy of origin, speed, potential, "
                               "binding energy or local density (C: the next one)")
        form.addRow("Colour by", self.colour)
        self.colour_map = QComboBox()
        self.colour_map.addItems(COLOUR_MAPS)
        self.colour_map.setCurrentText(look.colour_map)
        self.colour_map.setToolTip("Colour map (vispy.color) for speed, potential, energy, "
                                   "density and mass")
        form.addRow("Colour map", self.colour_map)
        self.tone_map = QComboBox()
        self.tone_map.addItems(TONE_MAPS)
        form.addRow("Tone map", self.tone_map)
        row = QHBoxLayout()
        self.boxes = QCheckBox("Tree boxes")
        self.boxes.setToolTip("Octree overlay (B)")
        self.box_lo, self.box_hi = QSpinBox(), QSpinBox()
        for spin, value in ((self.box_lo, look.box_levels[0]), (self.box_hi, look.box_levels[1])):
            spin.setRange(0, MAX_TREE_LEVEL)
            spin.setValue(value)
        row.addWidget(self.boxes)
        row.addWidget(QLabel("levels"))
        row.addWidget(self.box_lo)
        row.addWidget(QLabel("to"))
        row.addWidget(self.box_hi)
        form.addRow(row)

        self.record = QPushButton("Record…")
        self.record.setCheckable(True)
        self.record.setToolTip("Record the canvas into an mp4 movie (Ctrl+M)")
        layout.addWidget(self.record)
        layout.addStretch(1)
