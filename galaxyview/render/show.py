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


from galaxyview.render.camera_path import CameraPath


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
