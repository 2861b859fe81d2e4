"""The window's ring-scene slots (mixed into MainWindow): restitution law and coefficient live,
optical depth (the scene is built again), top and edge-on views, ghost boxes; ring scenes are
drawn as shaded spheres."""
from __future__ import annotations

from PyQt6.QtCore import QSignalBlocker

from galaxyview.app.control_table import control
from galaxyview.errors import GalaxyviewError
from galaxyview.model.ics.ring import with_optical_depth
from galaxyview.render import rings

DT_RANGE = control("dt").range  # the panel's dt control for N-body scenes


class RingActions:
    _posted_sheet = None  # the last sheet sent to the worker (changes build on it)
    galaxy_colours = None  # (colour mode, colour map) before a ring scene took them over

    def _connect_ring(self) -> None:
        p = self.panel
        p.view_top.clicked.connect(lambda: self.ring_view("top"))
        p.view_edge.clicked.connect(lambda: self.ring_view("edge"))

    @property
    def sheet(self):
        return None if self.session is None else self.sim.engine.params.sheet

    def _show_ring(self) -> None:
        """After a scene opens: the ring group, spheres and the top view for a ring scene."""
        p, sheet = self.panel, self.sheet
        self._posted_sheet = None
        p.ring_form.parentWidget().setVisible(sheet is not None)
        dt = self.sim.engine.params.dt  # SI seconds for rings, N-body units otherwise
        p.dt.set_range(*((dt / 1000, 10 * dt) if sheet is not None else DT_RANGE))
        p.dt.set_value(dt)
        if sheet is None:
            if self.look.spheres:
                self.set_look(spheres=False, ghosts=False, sheet_box=None)
                if self.galaxy_colours is not None:  # their signals set the look
                    mode, colour_map = self.galaxy_colours
                    p.colour_map.setCurrentText(colour_map)
                    p.colour.setCurrentText(mode)
            return
        if not self.look.spheres:
            self.galaxy_colours = (self.look.colour_mode, self.look.colour_map)
        with QSignalBlocker(p.restitution), QSignalBlocker(p.ghosts):
            p.restitution.setCurrentText(sheet.restitution)
            p.ghosts.setChecked(self.look.ghosts)
        p.eps_n.set_value(sheet.eps_n)
        config = self.sim.scene.config if self.sim.scene is not None else None
        tau = getattr(config, "optical_depth", None)
        p.optical_depth.setEnabled(tau is not None)
        if tau is not None:
            p.optical_depth.set_value(tau)
        ring = rings.ring_look(self.look, sheet)
        p.colour_map.setCurrentText(ring.colour_map)  # their signals set the look
        p.colour.setCurrentText(ring.colour_mode)
        self.set_look(spheres=True, sheet_box=ring.sheet_box)
        self.ring_view("top")

    def set_sheet(self, **changes) -> None:
        """A live change of the restitution law or coefficient (checked first)."""
        sheet = self.sheet
        if sheet is None:
            return
        try:  # on top of changes posted and not yet applied
            new = (self._posted_sheet or sheet).with_(**changes)
        except GalaxyviewError as exc:
            self.show_error("Bad ring parameter", str(exc))
            return
        self._posted_sheet = new
        self.worker.set_params(sheet=new)
        last = self.session.last
        self.plot.add_marker(last.time if last else 0.0,
                             ", ".join(f"{k}={v}" for k, v in changes.items()))

    def set_optical_depth(self, tau: float) -> None:
        sim = self.sim
        if sim is None or sim.scene is None:
            return
        try:
            scene = with_optical_depth(sim.scene, tau)
        except GalaxyviewError as exc:
            self.show_error("Bad optical depth", str(exc))
            return
        name = self.source_name
        try:
            self.open_source(scene, sim.engine.n)
        except GalaxyviewError as exc:
            self.show_error("Cannot rebuild the ring", str(exc))
        self.source_name = name
        self._select_scene_item(name)

    def ring_view(self, which: str) -> None:
        if self.sheet is not None:
            rings.view(self.canvas.camera, self.sheet, which)
            self._dirty = True

    def _ring_before_draw(self) -> None:
        """The ghost images' offsets at the drawn state's time."""
        sheet, last = self.sheet, self.session.last if self.session else None
        if sheet is not None and self.look.ghosts:
            self.canvas.renderer.ghost_offsets = rings.ghost_offsets(
                sheet, last.time if last else 0.0)
