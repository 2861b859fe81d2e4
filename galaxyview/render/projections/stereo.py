"""Stereo pairs: two perspective eyes projection.eye_sep apart along the camera's right,
parallel, their frusta shifted (off-axis) so that they converge on the camera's centre, which
then lies in the screen's plane; the left eye on the left half (side by side) or the top half
(top-bottom)."""
from __future__ import annotations

import numpy as np

from galaxyview.light.kernel import PERSPECTIVE, eye_row


def eye_mvp(camera, aspect: float, offset: float) -> np.ndarray:
    """The mvp of an eye `offset` along the camera's right (negative: the left eye)."""
    _, right, _ = camera.basis()
    view = camera.view_matrix()
    view[:3, 3] -= view[:3, :3] @ (offset * right)
    proj = camera.projection_matrix(aspect)
    shift = np.eye(4)
    # the centre, at depth camera.distance, lands at the middle of both eyes' frames
    shift[0, 3] = offset * proj[0, 0] / camera.distance
    return shift @ proj @ view


def _pair(camera, projection, left_vp, right_vp):
    half = 0.5 * projection.separation(camera)
    rows = []
    for vp, offset in ((left_vp, -half), (right_vp, half)):
        rows.append(eye_row(eye_mvp(camera, vp[2] / max(vp[3], 1), offset), vp))
    return PERSPECTIVE, rows


def side_by_side(camera, size, projection):
    w, h = size
    left = w // 2
    return _pair(camera, projection, (0, 0, left, h), (left, 0, w - left, h))


def top_bottom(camera, size, projection):
    w, h = size
    bottom = h // 2
    return _pair(camera, projection, (0, bottom, w, h - bottom), (0, 0, w, bottom))
