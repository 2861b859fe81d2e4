"""A perspective camera that orbits a centre point (z up), with pan, zoom, fly and follow."""
from __future__ import annotations

import math

import numpy as np

from galaxyview.render.projections import Projection

FIT_SAMPLE = 200_000  # particles looked at by fit(); more changes nothing visible


def _normalise(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-30)


class Camera:
    """Looks at `centre` from `distance` away, in the direction set by azimuth and elevation.

    Matrices are for column vectors (clip = projection @ view @ [x, y, z, 1]).
    Modes: orbit/zoom/pan move the eye around the centre; fly() and turn() move the eye itself
    (fly mode); follow(point) keeps the centre on a point or on a callable's result each frame;
    fixed() stops following, so the camera stays where it is.
    """

    def __init__(self, fov_deg: float = 45.0):
        self.fov_deg = float(fov_deg)
        self.centre = np.zeros(3)
        self.distance = 5.0
        self.azimuth = -90.0  # degrees about z; -90 looks along +y
        self.elevation = 30.0  # degrees above the x-y plane
        self._follow = None
        self.fit_source = None  # callable -> (N, 3) positions, set by the renderer's attach()
        self.projection = Projection()  # how the view reaches the pixels (render/projections)

    # -- geometry ------------------------------------------------------------------------------
    def direction(self) -> np.ndarray:
        """Unit vector from the centre to the eye."""
        az, el = math.radians(self.azimuth), math.radians(self.elevation)
        return np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])

    @property
    def eye(self) -> np.ndarray:
        return self.centre + self.distance * self.direction()

    def basis(self):
        """(forward, right, up) unit vectors of the view."""
        forward = -self.direction()
        right = _normalise(np.cross(forward, [0.0, 0.0, 1.0]))
        return forward, right, np.cross(right, forward)

    def view_matrix(self) -> np.ndarray:
        forward, right, up = self.basis()
        m = np.eye(4)
        m[0, :3], m[1, :3], m[2, :3] = right, up, -forward
        m[:3, 3] = -m[:3, :3] @ self.eye
        return m

    def projection_matrix(self, aspect: float) -> np.ndarray:
        near, far = max(self.distance * 1e-3, 1e-6), self.distance * 1e3
        f = 1.0 / math.tan(math.radians(self.fov_deg) / 2)
        m = np.zeros((4, 4))
        m[0, 0], m[1, 1] = f / aspect, f
        m[2, 2], m[2, 3] = (far + near) / (near - far), 2 * far * near / (near - far)
        m[3, 2] = -1.0
        return m

    def mvp(self, aspect: float) -> np.ndarray:
        return self.projection_matrix(aspect) @ self.view_matrix()

    def eyes(self, size: tuple[int, int]):
        """(projection code, eye rows) of self.projection for a (width, height) image."""
        return self.projection.eyes(self, size)

    def project(self, points: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        """Pixel coordinates (x right, y down) of (N, 3) points in a (width, height)
        perspective view."""
        w, h = size
        p = np.c_[np.asarray(points, float), np.ones(len(points))] @ self.mvp(w / h).T
        ndc = p[:, :2] / p[:, 3:4]
        return np.c_[(ndc[:, 0] + 1) * w / 2, (1 - ndc[:, 1]) * h / 2]

    # -- moves -----------------------------------------------------------------------------------
    def fit(self, positions: np.ndarray | None = None, coverage: float = 95.0) -> None:
        """Centre on the particles and back off until `coverage` percent of them are in view."""
        if positions is None:
            if self.fit_source is None:
                return
            positions = self.fit_source()
        pos = np.asarray(positions, dtype=np.float64)
        if len(pos) == 0:
            return
        if len(pos) > FIT_SAMPLE:
            pos = pos[:: len(pos) // FIT_SAMPLE + 1]
        centre = np.median(pos, axis=0)
        radius = float(np.percentile(np.linalg.norm(pos - centre, axis=1), coverage))
        self.centre = centre
        self.distance = max(radius, 1e-3) / math.sin(math.radians(self.fov_deg) / 2) * 1.05
        if self._follow is not None and not callable(self._follow):
            self._follow = None

    def orbit(self, d_azimuth_deg: float, d_elevation_deg: float = 0.0) -> None:
        self.azimuth = (self.azimuth + d_azimuth_deg + 180.0) % 360.0 - 180.0
        self.elevation = float(np.clip(self.elevation + d_elevation_deg, -89.0, 89.0))

    def zoom(self, factor: float) -> None:
        """factor > 1 moves closer."""
        self.distance = float(np.clip(self.distance / factor, 1e-4, 1e7))

    def pan(self, dx: float, dy: float) -> None:
        """Shift the view by dx, dy in units of the visible height at the centre."""
        _, right, up = self.basis()
        height = 2 * self.distance * math.tan(math.radians(self.fov_deg) / 2)
        self.centre = self.centre + height * (dx * right + dy * up)
        self._follow = None

    def fly(self, forward: float = 0.0, right: float = 0.0, up: float = 0.0) -> None:
        """Move eye and centre together, in units of the current distance."""
        f, r, u = self.basis()
        self.centre = self.centre + self.distance * (forward * f + right * r + up * u)
        self._follow = None

    def turn(self, d_azimuth_deg: float, d_elevation_deg: float = 0.0) -> None:
        """Look around from where the eye is (fly mode): the centre moves, the eye stays."""
        eye = self.eye
        self.orbit(d_azimuth_deg, d_elevation_deg)
        self.centre = eye - self.distance * self.direction()
        self._follow = None

    def follow(self, point) -> None:
        """Keep the centre on `point` (3 numbers, or a callable returning them); None stops."""
        if point is not None and not callable(point):
            point = np.asarray(point, dtype=np.float64).reshape(3)
        self._follow = point
        self.update()

    def set_view(self, eye, target, fov_deg: float | None = None) -> None:
        """Look from `eye` at `target` (camera paths); stops following. The elevation is kept
        within +-89 degrees, as orbit() keeps it."""
        eye, target = np.asarray(eye, np.float64), np.asarray(target, np.float64)
        d = eye - target
        r = float(np.linalg.norm(d))
        self.centre = target.copy()
        self.distance = max(r, 1e-4)
        self.azimuth = math.degrees(math.atan2(d[1], d[0]))
        self.elevation = float(np.clip(math.degrees(math.asin(np.clip(d[2] / max(r, 1e-30),
                                                                      -1, 1))), -89.0, 89.0))
        if fov_deg is not None:
            self.fov_deg = float(fov_deg)
        self._follow = None

    def fixed(self) -> None:
        """Stop following: the camera stays where it is until moved."""
        self._follow = None

    @property
    def following(self) -> bool:
        return self._follow is not None

    def update(self) -> None:
        """Called once per frame: moves the centre to the followed point."""
        if self._follow is not None:
            point = self._follow() if callable(self._follow) else self._follow
            self.centre = np.asarray(point, dtype=np.float64).reshape(3)
