"""Look files: the window's look (render/look.py Look) as TOML, saved by the window's File >
Save look… and read by `galaxyview record --look FILE` (docs/recording.md):

    # a galaxyview look
    point_size = 3.0
    exposure = 1.5
    colour_mode = "speed"
    colour_map = "inferno"
    tone_map = "exp"
    value_range = [0.0, 2.0]        # optional: the colour map's ends
    background = [0.0, 0.0, 0.015]
    bloom = 0.5                     # optional: the glow of the brightest light (0: off)
    bloom_radius = 8.0              # optional: its sigma, px of a 1080-line frame
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from galaxyview.errors import ParameterError, SceneError
from galaxyview.files import check_output_path
from galaxyview.model.validate import Table, read_toml
from galaxyview.render.look import COLOUR_MAPS, COLOUR_MODES, TONE_MAPS, Look

KEYS = ("point_size", "exposure", "colour_mode", "colour_map", "tone_map", "value_range",
        "background", "bloom", "bloom_radius")


def save_look(look: Look, path, overwrite: bool = False) -> Path:
    """Write the look's KEYS as TOML at `path` (renamed into place); returns the path."""
    import tomli_w

    path = check_output_path(path, overwrite, ParameterError)
    doc = {"point_size": float(look.point_size), "exposure": float(look.exposure),
           "colour_mode": look.colour_mode, "colour_map": look.colour_map,
           "tone_map": look.tone_map, "background": [float(v) for v in look.background[:3]],
           "bloom": float(look.bloom), "bloom_radius": float(look.bloom_radius)}
    if look.value_range is not None:
        doc["value_range"] = [float(v) for v in look.value_range]
    text = "# a galaxyview look (docs/recording.md)\n" + tomli_w.dumps(doc)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise ParameterError(f"{path}: cannot write it ({exc.strerror or exc})") from None
    return path


def load_look(path) -> dict:
    """The look settings a look file gives (a dict of Look fields); SceneError naming the file
    and the key where it is wrong."""
    path = Path(path)
    t = Table(read_toml(path, "look"), path)
    found = {
        "point_size": t.number("point_size", None, lo=0.5, hi=64),
        "exposure": t.number("exposure", None, lo=0, hi=1e4, lo_open=True),
        "colour_mode": t.string("colour_mode", None, choices=COLOUR_MODES),
        "colour_map": t.string("colour_map", None, choices=COLOUR_MAPS),
        "tone_map": t.string("tone_map", None, choices=TONE_MAPS),
        "value_range": t.vector("value_range", None, length=2),
        "background": t.vector("background", None, length=3),
        "bloom": t.number("bloom", None, lo=0, hi=1),
        "bloom_radius": t.number("bloom_radius", None, lo=0.5, hi=32),
    }
    t.finish()
    found = {k: (tuple(float(x) for x in v) if k in ("value_range", "background") else v)
             for k, v in found.items() if v is not None}
    try:
        Look(**found)
    except ParameterError as exc:
        raise SceneError(f"{path}: {exc}") from None
    return found
