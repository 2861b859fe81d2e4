"""How ring scenes (the shearing sheet, model/sheet.py) are shown: shaded spheres coloured by
vertical velocity, a top and an edge-on view of the box, the box's ghost images."""
from __future__ import annotations

import math

import numpy as np

from galaxyview.render.camera import Camera
from galaxyview.render.look import Look

VIEWS = ("top", "edge")
RING_COLOUR_MODES = ("vz", "z", "speed")


def ring_look(look: Look, sheet=None, colour_mode: str | None = None) -> Look:
    """`look` with spheres on, coloured by `colour_mode` (default: vertical velocity, unless
    the look already colours by a ring mode) on a diverging map; `sheet`'s box outlined."""
    mode = colour_mode or (look.colour_mode if look.colour_mode in RING_COLOUR_MODES else "vz")
    box = None if sheet is None else (sheet.lx, sheet.ly)
    return look.with_(spheres=True, colour_mode=mode, sheet_box=box,
                      colour_map="coolwarm" if mode in ("vz", "z") else look.colour_map)


def view(camera: Camera, sheet, which: str) -> None:
    """The box from above ('top': x across, y up the screen) or along the orbit ('edge': x
    across, z up), the whole box in sight."""
    if which not in VIEWS:
        raise ValueError(f"ring view must be one of {', '.join(VIEWS)}, got {which!r}")
    span = max(sheet.lx, sheet.ly)
    d = 0.6 * span / math.tan(math.radians(0.5 * camera.fov_deg))
    target = np.zeros(3)
    if which == "top":  # elevation is kept within 89 degrees: nearly straight down
        eye = np.array([0.0, -d * math.cos(math.radians(89)), d * math.sin(math.radians(89))])
    else:
        eye = np.array([0.0, -d, 0.0])
    camera.set_view(eye, target)


def ghost_offsets(sheet, time: float) -> np.ndarray:
    """(8, 3) float32 offsets of the neighbour boxes at `time` (what the renderer draws)."""
    return sheet.ghost_offsets(time, 1)[0].astype(np.float32)
