"""A dome master: the azimuthal equidistant fisheye (angle from the dome's axis proportional to
the distance from the image centre), field of view projection.fov on the inscribed circle.

The dome's zenith, the axis, is the camera's up turned towards the camera's target by
projection.tilt degrees; the target is at the front, the bottom of the image (tilt 0: on the
horizon, the rim of a 180 degree master; tilt 90: at the centre)."""
from __future__ import annotations

import math

import numpy as np

from galaxyview.light.kernel import FISHEYE, eye_row


def dome_frame(camera, tilt_deg: float) -> np.ndarray:
    """(3, 3) rows: the image's right, the image's up (away from the front) and the axis."""
    forward, right, up = camera.basis()
    t = math.radians(tilt_deg)
    axis = math.cos(t) * up + math.sin(t) * forward
    image_up = math.sin(t) * up - math.cos(t) * forward
    return np.array([right, image_up, axis])


def eyes(camera, size, projection):
    w, h = size
    m = np.eye(4)
    m[:3, :3] = dome_frame(camera, projection.tilt)
    m[:3, 3] = -m[:3, :3] @ camera.eye
    return FISHEYE, [eye_row(m, (0, 0, w, h), math.radians(0.5 * projection.fov))]
