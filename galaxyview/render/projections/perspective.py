"""Today's view: the camera's perspective, its field of view camera.fov_deg."""
from __future__ import annotations

from galaxyview.light.kernel import PERSPECTIVE, eye_row


def eyes(camera, size, projection=None):
    w, h = size
    return PERSPECTIVE, [eye_row(camera.mvp(w / max(h, 1)), (0, 0, w, h))]
