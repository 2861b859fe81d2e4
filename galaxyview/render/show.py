"""What the show mode does to the camera and says in its caption, for one playlist item
(model/playlist.py); the window's show controller (app/show.py) calls it each frame.

Camera programmes, from the view the scene was framed with when it opened:
- orbit: turns about the vertical axis at orbit_deg_per_s;
- fly: a fly-through: from 1.6 times the framing distance and 50 degrees up, in to half the
  distance and 10 degrees up while turning 120 degrees, eased in and out over the item;
- follow: keeps a point (the first galaxy's core) in the centre while turning slowly;
- path: a camera path file (render/camera_path.py), keyed to the simulation time.
"""
from __future__ import annotations

import math

from galaxyview.render.camera_path import CameraPath

MEASURE_S = 0.5  # the batch rate is measured over at least this long
MAX_STEPS_PER_FRAME = 1000  # the panel's range


def smoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3 - 2 * x)


class CameraProgramme:
    """apply(camera, seconds, sim_time) each frame; `start` is the camera's framed view."""

    def __init__(self, item, camera, follow=None):
        self.item = item
        self.start = (camera.centre.copy(), camera.distance, camera.azimuth, camera.elevation)
        self.path = CameraPath.load(item.camera_path) if item.camera == "path" else None
        if item.camera == "follow" and follow is not None:
            camera.follow(follow)

    def apply(self, camera, seconds: float, sim_time: float) -> None:
        centre, distance, azimuth, elevation = self.start
        kind = self.item.camera
        if kind == "path":
            self.path.apply(camera, sim_time)
        elif kind == "fly":
            s = smoothstep(seconds / self.item.duration)
            camera.distance = distance * (1.6 + (0.5 - 1.6) * s)
            camera.azimuth = azimuth + 120.0 * s
            camera.elevation = 50.0 + (10.0 - 50.0) * s
        else:  # orbit, follow (the centre moves with the followed point)
            rate = self.item.orbit_deg_per_s * (0.5 if kind == "follow" else 1.0)
            camera.azimuth = (azimuth + rate * seconds + 180.0) % 360.0 - 180.0


def caption_lines(name: str, text: str, sim_time: float, time_myr: float | None,
                  seconds: bool = False) -> list[str]:
    """The show's caption: the scene, what is happening, and the time (Myr with units,
    seconds for a scene in SI units)."""
    when = (f"t = {sim_time * time_myr:,.0f} Myr" if time_myr
            else f"t = {sim_time:,.0f} s" if seconds else f"t = {sim_time:.3g} (N-body units)")
    lines = [f"{name}   ·   {when}"]
    return lines + [text] if text else lines


class StoryPacer:
    """Keeps a scene's story (story_time at time step dt) to the item's `duration` seconds: from
    the step batches the window draws, measured as the show runs, the steps per frame that
    reach story_time as the item ends. update() each tick; hold() while the show is held."""

    def __init__(self, story_time: float, dt: float, duration: float, steps_per_frame: int,
                 seconds: float = 0.0, batches: int = 0):
        self.story_time, self.dt, self.duration = story_time, dt, duration
        self.steps_per_frame = max(1, int(steps_per_frame))
        self.hold(seconds, batches)

    def hold(self, seconds: float, batches: int) -> None:
        """Measure afresh from here (after a pause: no batches were drawn meanwhile)."""
        self._since, self._batches = seconds, batches

    def update(self, seconds: float, sim_time: float, batches: int) -> int:
        """The steps per frame from now on, at `seconds` into the item, the simulation at
        sim_time, `batches` step batches drawn so far (a running count)."""
        span = seconds - self._since
        if span < MEASURE_S or sim_time >= self.story_time:
            return self.steps_per_frame
        rate = (batches - self._batches) / span  # batches a second at the present pace
        self.hold(seconds, batches)
        if rate <= 0:
            return self.steps_per_frame
        left_steps = (self.story_time - sim_time) / self.dt
        left_batches = rate * max(self.duration - seconds, MEASURE_S)
        m = math.ceil(left_steps / max(left_batches, 1.0))
        # at most doubling or halving at once: a bigger batch also draws less often
        m = min(max(m, self.steps_per_frame // 2, 1), 2 * self.steps_per_frame,
                MAX_STEPS_PER_FRAME)
        self.steps_per_frame = m
        return m
