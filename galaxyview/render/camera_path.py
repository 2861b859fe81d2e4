"""Camera paths: keyframes (simulation time, eye, target, field of view) and the smooth camera
between them, kept as TOML files that the window, `galaxyview record --camera-path` and the
show mode all read.

    # a galaxyview camera path; time in N-body units of the simulation
    [[keyframe]]
    time = 0.0
    eye = [0.0, -120.0, 60.0]
    target = [0.0, 0.0, 0.0]
    fov = 45.0

Between keyframes the eye and the target follow cubic splines through all keyframes
(scipy.interpolate.CubicSpline, zero velocity at the first and last keyframe), which are
continuous in position, velocity and acceleration at every keyframe, so the view neither
jumps nor turns abruptly there; the field of view follows a monotone cubic (PCHIP: no
overshoot). Before the first and after the last keyframe the camera holds still.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from galaxyview.errors import ParameterError, SceneError
from galaxyview.files import check_output_path, temp_beside
from galaxyview.model.validate import Table, read_toml

FOV_RANGE = (1.0, 170.0)


@dataclass(frozen=True)
class Keyframe:
    time: float  # simulation time, N-body units
    eye: tuple  # where the camera is
    target: tuple  # what it looks at
    fov: float = 45.0  # vertical field of view, degrees

    def __post_init__(self):
        eye, target = np.asarray(self.eye, float), np.asarray(self.target, float)
        if eye.shape != (3,) or target.shape != (3,):
            raise ParameterError("a keyframe's eye and target are 3 numbers each")
        if not (np.isfinite(self.time) and np.isfinite(eye).all() and np.isfinite(target).all()):
            raise ParameterError(f"keyframe at t = {self.time}: time, eye and target must be "
                                 "finite")
        if np.linalg.norm(eye - target) <= 1e-9:
            raise ParameterError(f"keyframe at t = {self.time}: the eye sits on the target")
        if not FOV_RANGE[0] <= self.fov <= FOV_RANGE[1]:
            raise ParameterError(f"keyframe at t = {self.time}: fov must be in "
                                 f"[{FOV_RANGE[0]:g}, {FOV_RANGE[1]:g}] degrees, got {self.fov}")
        object.__setattr__(self, "eye", tuple(float(v) for v in eye))
        object.__setattr__(self, "target", tuple(float(v) for v in target))
        object.__setattr__(self, "time", float(self.time))
        object.__setattr__(self, "fov", float(self.fov))

    @classmethod
    def from_camera(cls, camera, time: float) -> "Keyframe":
        return cls(time, tuple(camera.eye), tuple(camera.centre), camera.fov_deg)


class CameraPath:
    """Keyframes sorted by time (at most one per time); at(t) gives (eye, target, fov)."""

    def __init__(self, keyframes=()):
        frames = sorted(keyframes, key=lambda k: k.time)
        times = [k.time for k in frames]
        if len(set(times)) != len(times):
            raise ParameterError("two keyframes at the same time; give each its own time")
        self.keyframes: tuple[Keyframe, ...] = tuple(frames)
        self._splines = None

    def __len__(self) -> int:
        return len(self.keyframes)

    @property
    def times(self) -> np.ndarray:
        return np.array([k.time for k in self.keyframes])

    # -- editing (each returns a new path) --------------------------------------------------------
    def with_keyframe(self, keyframe: Keyframe) -> "CameraPath":
        """This path with `keyframe` added (replacing one at the same time)."""
        return CameraPath([k for k in self.keyframes if k.time != keyframe.time] + [keyframe])

    def without(self, index: int) -> "CameraPath":
        return CameraPath(k for i, k in enumerate(self.keyframes) if i != index)

    def replaced(self, index: int, keyframe: Keyframe) -> "CameraPath":
        """Keyframe `index` moved to `keyframe` (another time, eye, target or fov)."""
        rest = [k for i, k in enumerate(self.keyframes) if i != index]
        return CameraPath(rest + [keyframe])

    # -- the camera ------------------------------------------------------------------------------
    def at(self, t: float) -> tuple[np.ndarray, np.ndarray, float]:
        """(eye, target, fov) at simulation time t."""
        if not self.keyframes:
            raise ParameterError("the camera path has no keyframes")
        if len(self.keyframes) == 1:
            k = self.keyframes[0]
            return np.array(k.eye), np.array(k.target), k.fov
        if self._splines is None:
            from scipy.interpolate import CubicSpline, PchipInterpolator

            times = self.times
            eyes = np.array([k.eye for k in self.keyframes])
            targets = np.array([k.target for k in self.keyframes])
            fovs = np.array([k.fov for k in self.keyframes])
            self._splines = (CubicSpline(times, eyes, bc_type="clamped"),
                             CubicSpline(times, targets, bc_type="clamped"),
                             PchipInterpolator(times, fovs))
        t = float(np.clip(t, self.keyframes[0].time, self.keyframes[-1].time))
        eye, target, fov = self._splines
        return eye(t), target(t), float(fov(t))

    def apply(self, camera, t: float) -> None:
        """Put `camera` where the path is at simulation time t (it stops following)."""
        eye, target, fov = self.at(t)
        camera.set_view(eye, target, fov)

    # -- files -----------------------------------------------------------------------------------
    def save(self, path, overwrite: bool = False) -> Path:
        import tomli_w

        path = check_output_path(path, overwrite, ParameterError)
        doc = {"keyframe": [{"time": k.time, "eye": list(k.eye), "target": list(k.target),
                             "fov": k.fov} for k in self.keyframes]}
        text = ("# a galaxyview camera path: eye, target (what it looks at) and field of view "
                "(degrees)\n# at simulation times (N-body units); docs/viewer.md\n"
                + tomli_w.dumps(doc))
        try:  # a hidden temporary file of our own (never the user's NAME.tmp), then renamed
            with temp_beside(path) as (tmp, f):
                f.write(text.encode())
                f.close()
                os.replace(tmp, path)
        except OSError as exc:
            raise ParameterError(f"{path}: cannot write it ({exc.strerror or exc})") from None
        return path

    @classmethod
    def load(cls, path) -> "CameraPath":
        path = Path(path)
        root = Table(read_toml(path, "camera path"), path)
        frames = []
        for table in root.tables("keyframe"):
            time = table.number("time")
            eye, target = table.vector("eye"), table.vector("target")
            fov = table.number("fov", 45.0, lo=FOV_RANGE[0], hi=FOV_RANGE[1])
            table.finish()
            try:
                frames.append(Keyframe(time, tuple(eye), tuple(target), fov))
            except ParameterError as exc:
                raise SceneError(f"{path}: {table.where}: {exc}") from None
        root.finish()
        if not frames:
            raise SceneError(f"{path}: no [[keyframe]] tables; a camera path needs at least one")
        try:
            return cls(frames)
        except ParameterError as exc:
            raise SceneError(f"{path}: {exc}") from None
