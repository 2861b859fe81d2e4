"""Scene and parameter handling of the window: opening scenes and snapshots, the particle count,
theta / dt / eps, and showing the running simulation in the panel."""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path

from PyQt6.QtCore import QCoreApplication, QEventLoop, QSignalBlocker, Qt
from PyQt6.QtWidgets import QFileDialog

from galaxyview.app import control_wiring
from galaxyview.app.hud import modules_line
from galaxyview.app.session import Session
from galaxyview.errors import GalaxyviewError
from galaxyview.model.scene import Scene
from galaxyview.snapshots.registry import open_filter


@dataclass
class ViewOptions:
    source: str | None = None
    backend: str = "auto"
    n: int | None = None
    theta: float | None = None
    dt: float | None = None
    eps: float | None = None
    gravity: str | None = None  # None: the integrator's choice
    engine: dict = field(default_factory=dict)  # device, integrator, boundary, collision
    steps_per_frame: int | None = None  # None: the scene's CPU pace, else 1
    projection: object = None  # a render/projections Projection (None: perspective)


def _shipped():
    try:
        from galaxyview.model.scene import shipped_scenes
        return shipped_scenes()
    except GalaxyviewError:
        return []


class SceneActions:
    """MainWindow's scene and parameter slots (mixed into MainWindow)."""

    def _list_shipped_scenes(self) -> None:
        combo = self.panel.scene
        for name, description, _ in _shipped():
            combo.addItem(name, name)
            combo.setItemData(combo.count() - 1, description, Qt.ItemDataRole.ToolTipRole)

    def open_source(self, source: str, n: int | None = None) -> None:
        """Load a scene or snapshot and run it; raises GalaxyviewError (nothing changes then)."""
        from galaxyview.simulation import open_simulation

        o = self.options
        self._made = 0  # particles made so far (_making)
        try:
            sim = open_simulation(source if isinstance(source, Scene) else str(source),
                                  o.backend, n, o.theta, o.dt, o.eps, o.gravity, **o.engine,
                                  progress=self._making)
        except MemoryError:
            raise GalaxyviewError(f"{source}: not enough memory for this many particles; "
                                  "choose a smaller particle count") from None
        # command-line overrides (n, theta, dt, eps, steps per frame) apply to the first scene
        self.options = ViewOptions(backend=o.backend, gravity=o.gravity)
        if self.session is not None:
            self.session.close()
        self.session = s = Session(sim, self.canvas, self.panel.accuracy.isChecked())
        s.changed.connect(lambda frame, s=s: self._on_frame(s, frame))
        s.failed.connect(lambda msg, s=s: self._on_failed(s, msg))
        if not isinstance(source, Scene):  # a changed scene (ring_actions) keeps the name
            self.source_name = str(source)
        self.scrub.attach(s)
        self.canvas.renderer.ranges.clear()  # colour map ranges come from the new scene
        s.worker.colour_mode = self.look.colour_mode
        bar = self.timeline_bar
        s.worker.configure_timeline(bar.capacity.value(), bar.every.value())
        self.canvas.camera.fit(s.positions)
        self.plot.clear()
        self.panel.steps_per_frame.setValue(o.steps_per_frame or self._paced_steps(sim))
        self._show_sim()
        self._show_ring()

    def _making(self, k: int, n: int) -> None:
        """open_simulation's progress: a status line while a scene of PROGRESS_FROM or more
        particles is made (the window repaints; user input waits)."""
        from galaxyview.simulation import PROGRESS_FROM

        if n < PROGRESS_FROM:
            return
        self._made += k
        self.statusBar().showMessage(f"making the particles: {self._made / 1e6:.1f}M of "
                                     f"{n / 1e6:.1f}M", 4000)
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)

    @staticmethod
    def _paced_steps(sim) -> int:
        """Steps per frame of the scene's CPU pace (model/pace.py); 1 on the GPU."""
        if sim.scene is None or sim.engine.on_gpu:
            return 1
        pace = sim.scene.cpu_pace(sim.engine.n, sim.backend)
        return pace.steps_per_frame if pace else 1

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
        with QSignalBlocker(p.n):
            p.n.setValue(sim.engine.n)
        p.n.setEnabled(sim.scene is not None)
        p.engine.setText(f"{sim.engine.device_name}\npositions by {self.session.source.path}")
        p.modules.setText(modules_line(sim.engine.modules))
        control_wiring.show_sim(self, sim)
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
        path, _ = QFileDialog.getOpenFileName(self, "Open a scene or snapshot", "",
                                              open_filter())
        if path:
            self.load(path)

    def set_param(self, name: str, value: float) -> None:
        """A Params field (theta, dt, eps, eta, ...) for the next step (checked first)."""
        if self.session is None:
            return
        try:
            self.sim.engine.params.with_(**{name: value})
        except GalaxyviewError as exc:
            self.show_error("Bad parameter", str(exc))
            return
        self.worker.set_params(**{name: value})
        last = self.session.last
        label = next((c.label for c in self.panel.table if c.sets == "param" and c.field == name),
                     name)
        self.plot.add_marker(last.time if last else 0.0, f"{label}={value:g}")
