"""The main window: canvas with heads-up display, energy plot and control panel, wired to the
running simulation (a Session, stepped in a worker thread)."""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path

from PyQt6.QtCore import Qt, QTimer
from PyQt6.QtWidgets import (QFileDialog, QMainWindow, QMessageBox, QScrollArea, QSplitter,
                             QVBoxLayout, QWidget)

from galaxyview.app import recording
from galaxyview.app.canvas import ViewerCanvas
from galaxyview.app.energy_plot import EnergyPlot
from galaxyview.app.hud import Hud, HudInfo
from galaxyview.app.panel import ControlPanel
from galaxyview.app.session import Session, wait_for_workers
from galaxyview.app.shortcuts import build_menus
from galaxyview.errors import GalaxyviewError
from galaxyview.render.look import COLOUR_MODES, Look
from galaxyview.render.sources import speed_scale

FRAME_MS = 15  # the UI frame timer
HUD_MS = 250
AUTO_ORBIT_DEG = 0.25  # per drawn frame
OPEN_FILTER = "Scenes and snapshots (*.toml *.tipsy *.std *.bin *.dat);;All files (*)"
PARAM_SYMBOLS = {"theta": "θ", "dt": "dt", "eps": "ε"}

__all__ = ["MainWindow", "ViewOptions", "save_png", "wait_for_workers"]


@dataclass
class ViewOptions:
    source: str | None = None
    backend: str = "auto"
    n: int | None = None
    theta: float | None = None
    dt: float | None = None
    eps: float | None = None
    gravity: str = "tree"


class MainWindow(QMainWindow):
    def __init__(self, options: ViewOptions | None = None):
        super().__init__()
        self.options = options or ViewOptions()
        self.setWindowTitle("galaxyview")
        self.look = Look()
        self.canvas = ViewerCanvas(self.look)
        self.canvas.before_draw = self._before_draw
        self.hud = Hud(self.canvas.native)
        self.plot = EnergyPlot()
        self.panel = ControlPanel(self.look)
        self.session: Session | None = None
        self.source_name = None
        self.playing = False
        self.steps_per_frame = 1
        self.step_frames = 0  # step batches drawn since the window opened
        self.recorder = None
        self.last_error = self.error_dialog = self.help_dialog = None
        self._fit_pending = False
        self._dirty = True
        self._layout()
        self._connect()
        build_menus(self)
        self.timer = self._every(FRAME_MS, self._tick)
        self._hud_timer = self._every(HUD_MS, lambda: self.hud.show_info(self.hud_info()))

    def _every(self, ms: int, slot) -> QTimer:
        timer = QTimer(self)
        timer.setInterval(ms)
        timer.timeout.connect(slot)
        timer.start()
        return timer

    # -- layout ----------------------------------------------------------------------------------
    def _layout(self) -> None:
        left = QWidget()
        v = QVBoxLayout(left)
        v.setContentsMargins(0, 0, 0, 0)
        v.addWidget(self.canvas.native, 5)
        v.addWidget(self.plot, 1)
        scroll = QScrollArea()
        scroll.setWidget(self.panel)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(self.panel.sizeHint().width() + 24)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(scroll)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        self.setCentralWidget(split)
        self.resize(1280, 820)
        for name, description, _ in _shipped():
            self.panel.scene.addItem(name, name)
            self.panel.scene.setItemData(self.panel.scene.count() - 1, description,
                                         Qt.ItemDataRole.ToolTipRole)
        movie_missing = recording.movie_available()
        if movie_missing:
            self.panel.record.setEnabled(False)
            self.panel.record.setToolTip(f"Recording is off: {movie_missing}")

    def _connect(self) -> None:
        p = self.panel
        p.scene.activated.connect(lambda i: self.load(p.scene.itemData(i)))
        p.open.clicked.connect(self.open_dialog)
        p.n.editingFinished.connect(self._n_changed)
        p.reset.clicked.connect(self.reset)
        for name in ("theta", "dt", "eps"):
            getattr(p, name).committed.connect(lambda v, name=name: self.set_param(name, v))
        p.play.toggled.connect(self.set_playing)
        p.step.clicked.connect(self.single_step)
        p.steps_per_frame.valueChanged.connect(lambda v: setattr(self, "steps_per_frame", v))
        p.fit.clicked.connect(self.fit_camera)
        p.fly.toggled.connect(lambda on: setattr(self.canvas, "fly_mode", on))
        p.auto_orbit.toggled.connect(
            lambda on: setattr(self.canvas, "auto_orbit_deg", AUTO_ORBIT_DEG if on else 0.0))
        p.point_size.committed.connect(lambda v: self.set_look(point_size=v))
        p.exposure.committed.connect(lambda v: self.set_look(exposure=v))
        p.colour.currentTextChanged.connect(lambda t: self.set_look(colour_mode=t))
        p.tone_map.currentTextChanged.connect(lambda t: self.set_look(tone_map=t))
        p.boxes.toggled.connect(lambda on: self.set_look(boxes=on))
        p.box_lo.valueChanged.connect(self._box_levels_changed)
        p.box_hi.valueChanged.connect(self._box_levels_changed)
        p.record.clicked.connect(self.record_clicked)

    # -- the simulation --------------------------------------------------------------------------
    @property
    def sim(self):
        return self.session.sim if self.session else None

    @property
    def worker(self):
        return self.session.worker if self.session else None

    @property
    def energy_error(self):
        return self.session.energy_error if self.session else None

    @property
    def frame_shown(self) -> bool:
        """True when the latest state from the worker is in the vertex buffer."""
        return self.session is None or self.session.frame is None

    def open_source(self, source: str, n: int | None = None) -> None:
        """Load a scene or snapshot and run it; raises GalaxyviewError (nothing changes then)."""
        from galaxyview.simulation import open_simulation

        o = self.options
        try:
            sim = open_simulation(str(source), o.backend, n, o.theta, o.dt, o.eps, o.gravity)
        except MemoryError:
            raise GalaxyviewError(f"{source}: not enough memory for this many particles; "
                                  "choose a smaller particle count") from None
        # command-line overrides (n, theta, dt, eps) apply to the first scene only
        self.options = ViewOptions(backend=o.backend, gravity=o.gravity)
        if self.session is not None:
            self.session.close()
        self.session = s = Session(sim, self.canvas)
        s.changed.connect(lambda frame, s=s: self._on_frame(s, frame))
        s.failed.connect(lambda msg, s=s: self._on_failed(s, msg))
        self.source_name = str(source)
        self.canvas.renderer.auto_speed_max = speed_scale(sim.initial.vel)
        self.canvas.camera.fit(s.positions)
        self.plot.clear()
        self._show_sim()

    def load(self, source: str, n: int | None = None) -> bool:
        """open_source() for the window: an error shows a dialog and the current scene runs on."""
        name = Path(str(source)).name
        try:
            self.open_source(source, n)
            return True
        except GalaxyviewError as exc:
            self.show_error(f"Cannot open {name}", str(exc))
        except Exception as exc:  # a bug: say what, keep running
            traceback.print_exc()
            self.show_error(f"Cannot open {name}", f"unexpected error: {type(exc).__name__}: "
                                                   f"{exc}")
        self._select_scene_item(self.source_name)
        return False

    def _show_sim(self) -> None:
        p, sim = self.panel, self.sim
        p.n.blockSignals(True)
        p.n.setValue(sim.engine.n)
        p.n.blockSignals(False)
        p.n.setEnabled(sim.scene is not None)
        p.engine.setText(f"{sim.engine.device_name}\npositions by {self.session.source.path}")
        for name in ("theta", "dt", "eps"):
            getattr(p, name).set_value(getattr(sim.engine.params, name))
        self._select_scene_item(self.source_name)
        self.setWindowTitle(f"galaxyview: {sim.name}")
        self._dirty = True

    def _select_scene_item(self, source) -> None:
        if source is None:
            return
        combo = self.panel.scene
        i = combo.findData(source)
        if i < 0:
            combo.addItem(Path(source).name, source)
            i = combo.count() - 1
        combo.setCurrentIndex(i)

    def _n_changed(self) -> None:
        sim = self.sim
        if sim is not None and sim.scene is not None and self.panel.n.value() != sim.engine.n:
            self.load(self.source_name, self.panel.n.value())

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a scene or snapshot", "", OPEN_FILTER)
        if path:
            self.load(path)

    def set_param(self, name: str, value: float) -> None:
        """theta, dt or eps for the next step (checked first)."""
        if self.session is None:
            return
        try:
            self.sim.engine.params.with_(**{name: value})
        except GalaxyviewError as exc:
            self.show_error("Bad parameter", str(exc))
            return
        self.worker.set_params(**{name: value})
        last = self.session.last
        self.plot.add_marker(last.time if last else 0.0, f"{PARAM_SYMBOLS[name]}={value:g}")

    def set_playing(self, on: bool) -> None:
        self.playing = bool(on)
        if self.panel.play.isChecked() != self.playing:
            self.panel.play.setChecked(self.playing)
        self.panel.play.setText("Pause" if self.playing else "Play")

    def single_step(self) -> None:
        self.set_playing(False)
        if self.session is not None:
            self.session.post_steps(1)

    def reset(self) -> None:
        if self.session is not None:
            self.worker.reset()

    def _tick(self) -> None:
        s = self.session
        if s is not None and self.playing:
            s.post_steps(self.steps_per_frame)
        pending = s is not None and s.frame is not None
        if (self._dirty or pending or self._fit_pending or self.canvas.auto_orbit_deg
                or self.canvas.camera.following):
            self._dirty = False
            self.canvas.update()

    def _on_frame(self, session, frame) -> None:
        if session is not self.session:
            return
        if frame.kind == "reset":
            self.plot.clear()
        if frame.energy is not None:
            self.plot.add_point(frame.time, session.energy_error)
        self._dirty = True

    def _on_failed(self, session, message: str) -> None:
        if session is self.session:
            self.set_playing(False)
            self.show_error("The engine stopped", message)

    def _before_draw(self) -> None:
        """In the GL context before each paint."""
        if self.session is not None and self.session.sync(self.look):
            self.step_frames += 1
        if self._fit_pending:
            self.fit_camera()

    # -- camera and look -------------------------------------------------------------------------
    def fit_camera(self) -> None:
        """Frame the particles (on the GPU engine as soon as the worker is idle)."""
        positions = self.session.fit_positions() if self.session else None
        self._fit_pending = self.session is not None and positions is None
        if positions is not None:
            self.canvas.camera.fit(positions)
        self._dirty = True

    def set_look(self, **changes) -> None:
        try:
            candidate = self.look.with_(**changes)  # validates
        except GalaxyviewError as exc:
            self.show_error("Bad display setting", str(exc))
            return
        for key in changes:
            setattr(self.look, key, getattr(candidate, key))
        self._dirty = True

    def _box_levels_changed(self) -> None:
        p = self.panel
        lo, hi = p.box_lo.value(), p.box_hi.value()
        if lo > hi:  # keep lo <= hi by moving the other end along
            moved_lo = self.sender() is p.box_lo
            lo, hi = (lo, lo) if moved_lo else (hi, hi)
            other = p.box_hi if moved_lo else p.box_lo
            other.blockSignals(True)
            other.setValue(lo)
            other.blockSignals(False)
        self.set_look(box_levels=(lo, hi))

    def toggle_colour(self) -> None:
        other = COLOUR_MODES[1 - COLOUR_MODES.index(self.look.colour_mode)]
        self.panel.colour.setCurrentText(other)

    def scale_exposure(self, factor: float) -> None:
        value = min(max(self.look.exposure * factor, 0.01), 100.0)
        self.panel.exposure.set_value(value)
        self.set_look(exposure=value)

    # -- recording and screenshots ---------------------------------------------------------------
    def record_clicked(self) -> None:
        if self.recorder is not None:
            self.stop_recording()
            return
        path, _ = QFileDialog.getSaveFileName(self, "Record a movie", "galaxyview.mp4",
                                              "H.264 movies (*.mp4)")
        if path:
            self.start_recording(path, overwrite=True)  # the dialog asked about replacing
        self._show_recording()

    def start_recording(self, path, fps: int = 30, overwrite: bool = False) -> bool:
        try:
            self.recorder = recording.CanvasRecorder(self.canvas, path, fps, overwrite, self)
        except GalaxyviewError as exc:
            self.show_error("Cannot record", str(exc))
            self.recorder = None
        self._show_recording()
        return self.recorder is not None

    def stop_recording(self):
        """Finish the movie; returns its path (None when nothing was being recorded)."""
        rec, self.recorder = self.recorder, None
        path = None
        if rec is not None:
            try:
                path = rec.stop()
                self.statusBar().showMessage(f"movie written: {path} ({rec.frames} frames)", 8000)
            except GalaxyviewError as exc:
                self.show_error("Recording failed", str(exc))
        self._show_recording()
        return path

    def _show_recording(self) -> None:
        on = self.recorder is not None
        self.panel.record.setChecked(on)
        self.panel.record.setText("Stop recording" if on else "Record…")

    def screenshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save a screenshot", "galaxyview.png",
                                              "PNG images (*.png)")
        if path:
            try:
                save_png(path, self.canvas.render_image())
            except GalaxyviewError as exc:
                self.show_error("Cannot save the screenshot", str(exc))

    # -- feedback --------------------------------------------------------------------------------
    def show_error(self, title: str, text: str) -> None:
        """A non-blocking warning dialog; the last one stays in error_dialog."""
        self.last_error = text
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok,
                          self)
        box.open()
        self.error_dialog = box

    def hud_info(self) -> HudInfo:
        s = self.session
        if s is None:
            return HudInfo(fps=self.canvas.frame_rate, draw_ms=self.canvas.draw_ms)
        f, units = s.last, s.sim.units
        t = f.time if f else 0.0
        return HudInfo(
            fps=self.canvas.frame_rate, step_ms=f.step_ms if f and f.step_ms else 0.0,
            draw_ms=self.canvas.draw_ms, n=s.engine.n, time=t,
            time_myr=t * units.time_myr if units else None, energy_error=s.energy_error,
            engine=s.engine.device_name, path=s.source.path, playing=self.playing,
            recording=self.recorder is not None)

    def closeEvent(self, event) -> None:
        self.timer.stop()
        self._hud_timer.stop()
        if self.recorder is not None:
            self.stop_recording()
        if self.session is not None:
            self.session.close()  # the worker ends after its current step, off the GUI thread
            self.session = None
        event.accept()


def _shipped():
    try:
        from galaxyview.model.scene import shipped_scenes
        return shipped_scenes()
    except GalaxyviewError:
        return []


def save_png(path, rgb) -> Path:
    import imageio.v3 as iio

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise GalaxyviewError(f"{path}: screenshots are PNG files; give a name ending in .png")
    if not path.parent.is_dir():
        raise GalaxyviewError(f"{path}: the folder {path.parent} does not exist; create it first")
    try:
        iio.imwrite(path, rgb)
    except OSError as exc:
        raise GalaxyviewError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    return path
