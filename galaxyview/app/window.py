"""The main window: canvas with heads-up display, energy plot and control panel, wired to the
running simulation (a Session, stepped in a worker thread).

Its slots live with their seams: scenes.py (scenes and parameters), playback.py (the play / step
loop), look_actions.py (camera and look), recording.py (movies and screenshots)."""
from __future__ import annotations

from PyQt6.QtCore import Qt, QTimer
from PyQt6.QtWidgets import QMainWindow, QMessageBox, QScrollArea, QSplitter, QVBoxLayout, QWidget

from galaxyview.app import control_wiring, hud, settings as stored
from galaxyview.app.canvas import ViewerCanvas
from galaxyview.app.colour_bar import ColourBar
from galaxyview.app.energy_plot import EnergyPlot
from galaxyview.app.timeline_bar import TimelineBar
from galaxyview.engines import timeline
from galaxyview.app.keyframes import KeyframeActions
from galaxyview.app.look_actions import LookActions
from galaxyview.app.panel import ControlPanel
from galaxyview.app.playback import FRAME_MS, PlaybackActions
from galaxyview.app.recording import RecordingActions, movie_available, save_png
from galaxyview.app.ring_actions import RingActions
from galaxyview.app.scenes import SceneActions, ViewOptions
from galaxyview.app.scrub import ScrubBar
from galaxyview.app.session import Session, wait_for_workers
from galaxyview.app.shortcuts import build_menus
from galaxyview.render.camera import Camera
from galaxyview.render.look import Look
from galaxyview.render.projections import WIDE, WIDE_FIT_DEG

HUD_MS = 250
AUTO_ORBIT_DEG = 0.25  # per drawn frame

__all__ = ["MainWindow", "ViewOptions", "save_png", "wait_for_workers"]


class MainWindow(SceneActions, PlaybackActions, LookActions, RecordingActions, KeyframeActions,
                 RingActions, QMainWindow):
    def __init__(self, options: ViewOptions | None = None, settings=None):
        """settings: a QSettings to restore from and save to on close (None: neither)."""
        super().__init__()
        self.options = options or ViewOptions()
        self.settings = settings
        self.setWindowTitle("galaxyview")
        self.look = Look()
        self.canvas = ViewerCanvas(self.look)
        self.canvas.before_draw = self._before_draw
        self.canvas.after_draw = self._after_draw
        self._post_after_draw = False  # a batch to post once this paint is done (GPU)
        self.hud = hud.Hud(self.canvas.native)
        self.colour_bar = ColourBar(self.canvas.native)
        self.plot = EnergyPlot()
        self.scrub = ScrubBar()
        self.timeline_bar = TimelineBar(timeline.CAPACITY, timeline.EVERY)
        self.panel = ControlPanel(self.look)
        self.session: Session | None = None
        self.source_name = None
        self.playing = False
        self.steps_per_frame = 1
        self.step_frames = 0  # step batches drawn since the window opened
        self.stop_at_frame = None  # pause once this many are drawn (--screenshot)
        self.recorder = None
        self.audience = None  # the audience output while open (app/audience.py): Record records it
        self.last_error = self.error_dialog = self.help_dialog = None
        self.final_frame = None  # the last state reported before the window closed
        self.show_controller = None  # app/show.py, in show mode
        self.hud_enabled = True
        self.text_scale = 1.0  # HUD and show captions (set_text_scale)
        self._fit_pending = False
        self._dirty = True
        self._layout()
        self._connect()
        self._connect_keyframes()
        self._connect_ring()
        build_menus(self)
        if self.options.projection is not None:
            p = self.options.projection
            self.set_projection(p.name, fov=p.fov, tilt=p.tilt, eye_sep=p.eye_sep)
        if settings is not None:
            stored.restore(self, settings)
        self.timer = self._every(FRAME_MS, self._tick)
        self._hud_timer = self._every(HUD_MS, self._show_overlays)

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
        v.addWidget(self.scrub)
        v.addWidget(self.timeline_bar)
        v.addWidget(self.plot, 1)
        scroll = QScrollArea()
        scroll.setWidget(self.panel)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(self.panel.sizeHint().width() + 24)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.splitter = split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(scroll)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        self.setCentralWidget(split)
        self.resize(1280, 820)
        self._list_shipped_scenes()
        movie_missing = movie_available()
        if movie_missing:
            self.panel.record.setEnabled(False)
            self.panel.record.setToolTip(f"Recording is off: {movie_missing}")

    def _connect(self) -> None:
        p = self.panel
        p.scene.activated.connect(lambda i: self.load(p.scene.itemData(i)))
        p.open.clicked.connect(self.open_dialog)
        p.n.editingFinished.connect(self._n_changed)
        p.reset.clicked.connect(self.reset)
        control_wiring.connect(self)  # the control table's rows (app/control_table.py)
        p.play.toggled.connect(self.set_playing)
        p.step.clicked.connect(self.single_step)
        p.fit.clicked.connect(self.fit_camera)
        p.record.clicked.connect(self.record_clicked)
        self.timeline_bar.rewind.connect(self.rewind)
        self.timeline_bar.configured.connect(
            lambda k, m: self.worker is not None and self.worker.configure_timeline(k, m))

    def check_accuracy(self, on: bool) -> None:
        if self.session is not None:
            self.session.check_accuracy(on)

    def set_steps_per_frame(self, m: int) -> None:
        self.steps_per_frame = m

    def set_fly_mode(self, on: bool) -> None:
        self.canvas.fly_mode = on

    def set_auto_orbit(self, on: bool) -> None:
        self.canvas.auto_orbit_deg = AUTO_ORBIT_DEG if on else 0.0

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

    # -- feedback --------------------------------------------------------------------------------
    def show_error(self, title: str, text: str) -> None:
        """A non-blocking warning dialog; the last one stays in error_dialog."""
        self.last_error = text
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok,
                          self)
        box.open()
        self.error_dialog = box

    def _show_overlays(self) -> None:
        if not self.hud_enabled:
            return
        self.hud.show_info(self.hud_info())
        self.show_colour_bar()

    def set_text_scale(self, scale: float) -> None:
        """The size of the HUD's and the show's text, 1 the default (a projector: 2 or more)."""
        lo, hi = hud.TEXT_SCALES
        self.text_scale = float(min(max(scale, lo), hi))
        self.hud.set_scale(self.text_scale)

    def set_projection(self, name: str, **settings) -> None:
        """Draw through projection `name` (render/projections), its other settings kept; the
        camera refits closer in for a projection of half the sky or more, and back."""
        camera = self.canvas.camera
        was_wide = camera.projection.name in WIDE
        camera.projection = camera.projection.with_(name=name, **settings)
        if (name in WIDE) != was_wide:
            camera.fov_deg = WIDE_FIT_DEG if name in WIDE else Camera().fov_deg
            if self.session is not None:
                self.fit_camera()
        action = getattr(self, "projection_actions", {}).get(name)
        if action is not None:
            action.setChecked(True)
        self.canvas.update()

    def toggle_full_screen(self) -> None:
        if self.isFullScreen():
            self.showNormal()
        else:
            self.showFullScreen()

    def hud_info(self) -> hud.HudInfo:
        recording = self.recorder.what if self.recorder is not None else ""
        return hud.describe(self.session, self.canvas, self.playing, recording)

    def settings_source(self) -> str | None:
        """The scene or snapshot shown when the window was last closed (None: not kept)."""
        return stored.last_source(self.settings) if self.settings is not None else None

    def closeEvent(self, event) -> None:
        if self.settings is not None:
            stored.save(self, self.settings)
        if self.show_controller is not None:
            self.show_controller.stop()
        self.timer.stop()
        self._hud_timer.stop()
        if self.recorder is not None:
            self.stop_recording()
        if self.session is not None:
            self.final_frame = self.session.last
            self.session.close()  # the worker ends after its current step, off the GUI thread
            self.session = None
        event.accept()
