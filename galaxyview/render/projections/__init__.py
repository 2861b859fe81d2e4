"""How the particles reach the pixels: one registry of projections, shared by the window, the
show and `galaxyview record`. Each projection is a small module with `eyes(camera, size,
projection)` -> (code, rows): the light/kernel.py projection code and one row per eye (its
matrix, viewport and number; light/kernel.py EYE_FLOATS), which the GL sprites
(shaders/particles.vert), the host splat (light/kernel.py) and the CUDA splat
(kernels/render_splat.cu) all read.

- perspective: the camera's view (its field of view, camera.fov_deg).
- fisheye: a dome master (azimuthal equidistant, `fov` 180..230 degrees); the dome's zenith,
  the camera's up tilted towards its target by `tilt` degrees, at the centre; the target at
  the front (the bottom of the image).
- equirect: 360 x 180 degrees (mono), the camera's heading at the centre column, the poles
  (world z) at the top and bottom rows.
- stereo-sbs, stereo-tb: two perspective eyes `eye_sep` apart (scene units), left eye on the
  left or at the top, converging on the camera's centre.
- ods: omni-directional stereo 360 (top: left eye), eyes on a circle of diameter `eye_sep`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from galaxyview.errors import ParameterError
from galaxyview.render.projections import equirect, fisheye, perspective, stereo

PROJECTIONS = {
    "perspective": perspective.eyes,
    "fisheye": fisheye.eyes,
    "equirect": equirect.eyes,
    "stereo-sbs": stereo.side_by_side,
    "stereo-tb": stereo.top_bottom,
    "ods": equirect.ods,
}
FOV_RANGE = (180.0, 230.0)  # a dome master's field of view, degrees
WRAPS = ("equirect", "ods")  # frames that wrap around at the left and right edges
WIDE = ("fisheye", "equirect", "ods")  # half the sky or more: the camera's fit comes closer,
WIDE_FIT_DEG = 90.0  # as for a perspective of this field of view


@dataclass(frozen=True)
class Projection:
    """A projection's name and settings: `fov` (fisheye, degrees), `tilt` (fisheye, degrees)
    and `eye_sep` (stereo and ods, scene units; None: a thirtieth of the camera's distance)."""

    name: str = "perspective"
    fov: float = 180.0
    tilt: float = 0.0
    eye_sep: float | None = None

    def validate(self) -> "Projection":
        if self.name not in PROJECTIONS:
            raise ParameterError(f"projection must be one of {', '.join(PROJECTIONS)}, got "
                                 f"{self.name!r}")
        lo, hi = FOV_RANGE
        if not (isinstance(self.fov, (int, float)) and lo <= self.fov <= hi):
            raise ParameterError(f"a dome master's field of view must be {lo:g}..{hi:g} "
                                 f"degrees, got {self.fov!r}")
        if not (isinstance(self.tilt, (int, float)) and -90.0 <= self.tilt <= 90.0):
            raise ParameterError(f"the dome tilt must be -90..90 degrees, got {self.tilt!r}")
        if self.eye_sep is not None and not (isinstance(self.eye_sep, (int, float))
                                             and 0 < self.eye_sep < math.inf):
            raise ParameterError(f"the eye separation must be a positive number of scene "
                                 f"units, got {self.eye_sep!r}")
        return self

    def with_(self, **changes) -> "Projection":
        return replace(self, **changes).validate()

    @property
    def stereo(self) -> bool:
        return self.name in ("stereo-sbs", "stereo-tb", "ods")

    def separation(self, camera) -> float:
        return float(self.eye_sep) if self.eye_sep is not None else camera.distance / 30.0

    def eyes(self, camera, size) -> tuple[int, np.ndarray]:
        """(projection code, (E, EYE_FLOATS) float32 eye rows) for `camera` and size (w, h)."""
        code, rows = PROJECTIONS[self.name](camera, (int(size[0]), int(size[1])), self)
        return code, np.asarray(rows, np.float32)


__all__ = ["FOV_RANGE", "PROJECTIONS", "Projection", "WIDE", "WIDE_FIT_DEG", "WRAPS"]
