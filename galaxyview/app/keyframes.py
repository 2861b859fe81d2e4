"""Camera keyframes in the window: add the current view at the shown simulation time, select
one to look from it, move it (another view or time: Set), delete it, save and load the path
(TOML, render/camera_path.py), and let the camera follow the path as the simulation runs."""
from __future__ import annotations

from PyQt6.QtCore import QSignalBlocker
from PyQt6.QtWidgets import (QCheckBox, QDoubleSpinBox, QFileDialog, QGridLayout, QGroupBox,
                             QListWidget, QPushButton)

from galaxyview.app.recording import suggested_name
from galaxyview.errors import GalaxyviewError
from galaxyview.render.camera_path import CameraPath, Keyframe

PATH_FILTER = "Camera paths (*.toml);;All files (*)"


class KeyframeBox(QGroupBox):
    """The panel's Camera path group (widgets only; KeyframeActions wires them)."""

    def __init__(self, parent=None):
        super().__init__("Camera path", parent)
        grid = QGridLayout(self)
        self.list = QListWidget()
        self.list.setMaximumHeight(90)
        self.list.setToolTip("Keyframes: select one to look from it")
        grid.addWidget(self.list, 0, 0, 1, 3)
        self.add = QPushButton("Key")
        self.add.setToolTip("Add the current view at the shown time (K)")
        self.set = QPushButton("Set")
        self.set.setToolTip("Move the selected keyframe to the current view and the time box")
        self.delete = QPushButton("Delete")
        self.time = QDoubleSpinBox()
        self.time.setRange(-1e6, 1e6)
        self.time.setPrefix("t = ")
        self.time.setDecimals(6)
        self.time.setToolTip("Time of the selected keyframe (N-body units)")
        for i, w in enumerate((self.add, self.set, self.delete)):
            grid.addWidget(w, 1, i)
        self.follow = QCheckBox("Follow path")
        self.follow.setToolTip("The camera moves along the path with the simulation time (P)")
        self.save = QPushButton("Save…")
        self.load = QPushButton("Load…")
        grid.addWidget(self.time, 2, 0, 1, 2)
        grid.addWidget(self.follow, 2, 2)
        grid.addWidget(self.save, 3, 0)
        grid.addWidget(self.load, 3, 1)


class KeyframeActions:
    """MainWindow's camera-path slots (mixed into MainWindow); the path is `camera_path`."""

    def _connect_keyframes(self) -> None:
        k = self.panel.keyframes
        self.camera_path = CameraPath()
        k.add.clicked.connect(self.add_keyframe)
        k.set.clicked.connect(self.set_keyframe)
        k.delete.clicked.connect(self.delete_keyframe)
        k.list.currentRowChanged.connect(self._keyframe_selected)
        k.follow.toggled.connect(lambda on: setattr(self, "_dirty", True))
        k.save.clicked.connect(self.save_path_dialog)
        k.load.clicked.connect(self.load_path_dialog)

    @property
    def following_path(self) -> bool:
        return self.panel.keyframes.follow.isChecked() and len(self.camera_path) > 0

    def shown_time(self) -> float:
        return self.session.shown_time if self.session is not None else 0.0

    def set_camera_path(self, path: CameraPath, select: int | None = None) -> None:
        self.camera_path = path
        k = self.panel.keyframes
        with QSignalBlocker(k.list):
            k.list.clear()
            for kf in path.keyframes:
                eye = ", ".join(f"{v:.3g}" for v in kf.eye)
                k.list.addItem(f"t = {kf.time:.4g}   eye ({eye})   fov {kf.fov:.0f}°")
            if select is not None:
                k.list.setCurrentRow(select)
        self._dirty = True

    def add_keyframe(self) -> None:
        t = self.shown_time()
        path = self.camera_path.with_keyframe(Keyframe.from_camera(self.canvas.camera, t))
        self.set_camera_path(path, list(path.times).index(t))
        self.panel.keyframes.time.setValue(t)

    def set_keyframe(self) -> None:
        k = self.panel.keyframes
        i = k.list.currentRow()
        if i < 0:
            return
        t, old = k.time.value(), self.camera_path.keyframes[i].time
        if t == round(old, k.time.decimals()):  # the box shows the old time, rounded
            t = old
        try:
            path = self.camera_path.replaced(i, Keyframe.from_camera(self.canvas.camera, t))
        except GalaxyviewError as exc:
            self.show_error("Cannot move the keyframe", str(exc))
            return
        self.set_camera_path(path, list(path.times).index(t))

    def delete_keyframe(self) -> None:
        i = self.panel.keyframes.list.currentRow()
        if i >= 0:
            self.set_camera_path(self.camera_path.without(i))

    def _keyframe_selected(self, i: int) -> None:
        if 0 <= i < len(self.camera_path):
            kf = self.camera_path.keyframes[i]
            self.panel.keyframes.time.setValue(kf.time)
            self.canvas.camera.set_view(kf.eye, kf.target, kf.fov)
            self._dirty = True

    def follow_path(self) -> None:
        """Before a paint: the camera where the path is at the shown time."""
        if self.following_path:
            self.camera_path.apply(self.canvas.camera, self.shown_time())

    # -- files -----------------------------------------------------------------------------------
    def save_camera_path(self, path, overwrite: bool = False) -> bool:
        try:
            written = self.camera_path.save(path, overwrite)
        except GalaxyviewError as exc:
            self.show_error("Cannot save the camera path", str(exc))
            return False
        self.statusBar().showMessage(f"camera path saved: {written}", 8000)
        return True

    def load_camera_path(self, path) -> bool:
        try:
            self.set_camera_path(CameraPath.load(path))
        except GalaxyviewError as exc:
            self.show_error("Cannot load the camera path", str(exc))
            return False
        return True

    def save_path_dialog(self) -> None:
        if not len(self.camera_path):
            self.show_error("No keyframes", "add keyframes (Key) before saving a camera path")
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Save the camera path", suggested_name(self.source_name, "-camera.toml"),
            PATH_FILTER)
        if path:
            self.save_camera_path(path, overwrite=True)  # the dialog asked about replacing

    def load_path_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load a camera path", "", PATH_FILTER)
        if path:
            self.load_camera_path(path)
