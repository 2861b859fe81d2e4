"""Camera and look actions of the window: fit, display settings and the tree-box levels."""
from __future__ import annotations

from PyQt6.QtCore import QSignalBlocker
from PyQt6.QtWidgets import QFileDialog

from galaxyview.errors import GalaxyviewError


class LookActions:
    """MainWindow's camera and look slots (mixed into MainWindow)."""

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
        if "colour_mode" in changes and self.session is not None:
            self.worker.colour_mode = self.look.colour_mode
            self.worker.measure()  # vertices with the new values, also while paused
        self._dirty = True

    def set_box_lo(self, _level: int) -> None:
        self._box_levels_changed(moved_lo=True)

    def set_box_hi(self, _level: int) -> None:
        self._box_levels_changed(moved_lo=False)

    def _box_levels_changed(self, moved_lo: bool) -> None:
        p = self.panel
        lo, hi = p.box_lo.value(), p.box_hi.value()
        if lo > hi:  # keep lo <= hi by moving the other end along
            lo, hi = (lo, lo) if moved_lo else (hi, hi)
            other = p.box_hi if moved_lo else p.box_lo
            with QSignalBlocker(other):
                other.setValue(lo)
        self.set_look(box_levels=(lo, hi))

    def show_colour_bar(self) -> None:
        r, sim = self.canvas.renderer, self.sim
        galaxies = sim.initial_sample.meta.get("galaxies", ()) if sim is not None else ()
        mode = self.look.colour_mode
        self.colour_bar.show_for(mode, self.look.colour_map, r.colour_range(mode),
                                 tuple(str(g) for g in galaxies))

    def save_look_dialog(self) -> None:
        """File > Save look…: the look as TOML, for `galaxyview record --look`."""
        path, _ = QFileDialog.getSaveFileName(self, "Save the look", "look.toml",
                                              "Look (*.toml)")
        if path:
            self.save_look(path)

    def save_look(self, path) -> None:
        from galaxyview.render.look_file import save_look

        try:  # the dialog asked before replacing a file
            save_look(self.look, path, overwrite=True)
        except GalaxyviewError as exc:
            self.show_error("Cannot save the look", str(exc))
