"""360 x 180 degrees: equirectangular (longitude across, latitude up), the camera's heading at
the centre column, world z at the top row; and omni-directional stereo (ODS), whose eyes sit on
a circle of diameter projection.eye_sep, each column seen along the circle's tangent (left eye
on top, right eye below: the top-bottom layout 360 players take)."""
from __future__ import annotations

import numpy as np

from galaxyview.light.kernel import EQUIRECT, eye_row


def world_frame(camera) -> np.ndarray:
    """(3, 3) rows: right, up (world z) and forward, level whatever the camera's elevation."""
    forward = -camera.direction()
    forward[2] = 0.0
    n = float(np.linalg.norm(forward))
    if n < 1e-9:  # looking straight down or up: the heading from the azimuth
        forward = -np.array([np.cos(np.radians(camera.azimuth)),
                             np.sin(np.radians(camera.azimuth)), 0.0])
    else:
        forward /= n
    up = np.array([0.0, 0.0, 1.0])
    return np.array([np.cross(forward, up), up, forward])


def _matrix(camera) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = world_frame(camera)
    m[:3, 3] = -m[:3, :3] @ camera.eye
    return m


def eyes(camera, size, projection=None):
    w, h = size
    return EQUIRECT, [eye_row(_matrix(camera), (0, 0, w, h), 0.0)]


def ods(camera, size, projection):
    w, h = size
    top, bottom = h - h // 2, h // 2
    r = 0.5 * projection.separation(camera)
    m = _matrix(camera)
    return EQUIRECT, [eye_row(m, (0, bottom, w, top), r), eye_row(m, (0, 0, w, bottom), -r)]
