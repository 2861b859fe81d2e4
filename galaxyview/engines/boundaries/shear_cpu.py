"""The shear-periodic boundary of the shearing sheet, CPU (model/sheet.py for the geometry).

A particle leaving the box radially re-enters on the other side as its image in the
neighbour box would: x -/+ Lx, y +/- s(t) and v_y +/- 3/2 Omega Lx, so that it stays on the
same guiding-centre orbit relative to the shear flow; y is periodic; z is open.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.integrators.sei_cpu import sheet_of
from galaxyview.engines.modules import Boundary


def wrap(pos: np.ndarray, vel: np.ndarray, sheet, t: float) -> None:
    """Bring pos (N, 3) into the box at time t, shifting vel with it (in place)."""
    lx, ly = sheet.lx, sheet.ly
    # one box width per call is what a step can cross; more is a runaway, left to y's wrap
    k = np.floor(pos[:, 0] / lx + 0.5)  # -1, 0 or +1: which neighbour box it is in
    if k.any():
        pos[:, 0] -= k * lx
        pos[:, 1] += k * sheet.shift(t)
        vel[:, 1] += k * 1.5 * sheet.omega * lx
    pos[:, 1] -= ly * np.floor(pos[:, 1] / ly + 0.5)


class SheetImages(Boundary):
    """The ghost boxes of the sheet at the system's time (both engines)."""

    def ghosts(self, rings: int | None = None):
        s = self.system
        return sheet_of(s).ghost_offsets(s.time, rings)


class ShearPeriodic(SheetImages):
    def apply(self) -> None:
        s = self.system
        wrap(s.pos, s.vel, sheet_of(s), s.time)
