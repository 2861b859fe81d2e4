"""Show playlists: TOML files listing the scenes `galaxyview show` loops through, each with a
camera programme and timed captions (docs/viewer.md#show-mode).

    [show]
    fade = 1.5                 # seconds of cross-fade between scenes (0: a cut)
    idle = 20                  # seconds without input before the show takes over again
    labels = false             # the galaxies' names at their centres
    scale_bar = false          # a scale bar in the scene's length unit (perspective)
    [[item]]
    scene = "antennae"         # a shipped scene's name or a .toml path (relative to this file)
    duration = 60              # seconds on screen
    camera = "orbit"           # orbit | fly | follow | path
    orbit_deg_per_s = 6        # orbit and follow: turning rate
    camera_path = "a.toml"     # camera = "path": a camera path file (relative to this file)
    n = 20000                  # optional particle count; steps_per_frame optional too
    [[item.caption]]
    time = 0.0                 # from this simulation time on (N-body units), so the caption
    text = "Two disk galaxies fall towards each other"   # matches the picture on any machine
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from galaxyview.errors import SceneError
from galaxyview.model.validate import Table, read_toml
from galaxyview.resources import scenes_dir

CAMERAS = ("orbit", "fly", "follow", "path")
DEFAULT = "default"  # scenes/shows/default.toml


@dataclass(frozen=True)
class Caption:
    time: float  # shown from this simulation time (N-body units) on
    text: str


@dataclass(frozen=True)
class Item:
    scene: str
    duration: float
    camera: str = "orbit"
    orbit_deg_per_s: float = 6.0
    camera_path: Path | None = None
    n: int | None = None
    steps_per_frame: int | None = None
    captions: tuple = ()

    def caption_at(self, sim_time: float) -> str:
        """The caption at simulation time sim_time ('' before the first)."""
        text = ""
        for c in self.captions:
            if c.time <= sim_time:
                text = c.text
        return text


@dataclass(frozen=True)
class Playlist:
    items: tuple
    fade: float = 1.5
    idle: float = 20.0
    source: Path | None = None
    labels: bool = False  # the galaxies' names over the picture (render/annotations.py)
    scale_bar: bool = False


def shows_dir() -> Path:
    return scenes_dir() / "shows"


def playlist_path(name_or_path=None) -> Path:
    """The file of a shipped playlist name (default: the default one), or the given path."""
    if name_or_path is None:
        name_or_path = DEFAULT
    text = str(name_or_path)
    if "/" in text or text.endswith(".toml") or Path(text).is_file():
        return Path(text)
    path = shows_dir() / f"{text}.toml"
    if not path.is_file():
        shipped = sorted(p.stem for p in shows_dir().glob("*.toml"))
        raise SceneError(f"unknown playlist {text!r}; shipped: {', '.join(shipped) or 'none'} "
                         "(or give the path of a .toml playlist)")
    return path


def load_playlist(name_or_path=None) -> Playlist:
    path = playlist_path(name_or_path)
    return parse_playlist(read_toml(path, "playlist"), path)


def _relative(path: Path, value: str) -> str:
    """A scene or file named relative to the playlist's folder (shipped names stay names)."""
    if "/" in value or value.endswith(".toml"):
        return str((path.parent / value).resolve()) if not Path(value).is_absolute() else value
    return value


def parse_playlist(data: dict, path: Path) -> Playlist:
    root = Table(data, path)
    head = root.table("show", None)
    fade, idle, labels, scale_bar = 1.5, 20.0, False, False
    if head is not None:
        fade = head.number("fade", fade, lo=0, hi=30)
        idle = head.number("idle", idle, lo=0, lo_open=True)
        labels = head.boolean("labels", False)
        scale_bar = head.boolean("scale_bar", False)
        head.finish()
    items = []
    for t in root.tables("item"):
        camera = t.string("camera", "orbit", choices=CAMERAS)
        camera_path = t.string("camera_path", None)
        if (camera == "path") != (camera_path is not None):
            raise t.error("camera_path", camera_path, 'give it exactly when camera = "path"')
        captions = []
        for c in t.tables("caption", []):
            captions.append(Caption(c.number("time", 0.0), c.string("text")))
            c.finish()
        items.append(Item(
            scene=_relative(path, t.string("scene")),
            duration=t.number("duration", 30.0, lo=0, lo_open=True),
            camera=camera,
            orbit_deg_per_s=t.number("orbit_deg_per_s", 6.0, lo=-360, hi=360),
            camera_path=Path(_relative(path, camera_path)) if camera_path else None,
            n=t.integer("n", None, lo=1),
            steps_per_frame=t.integer("steps_per_frame", None, lo=1, hi=1000),
            captions=tuple(sorted(captions, key=lambda c: c.time))))
        t.finish()
    root.finish()
    if not items:
        raise SceneError(f"{path}: no [[item]] tables; a playlist needs at least one scene")
    return Playlist(tuple(items), fade, idle, path, labels, scale_bar)
