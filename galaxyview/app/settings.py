"""What the viewer keeps between runs (QSettings, e.g. ~/.config/galaxyview/viewer.conf): the
window's geometry, the panel's width and camera toggles, the look and the last scene.

A value that no longer makes sense (edited by hand, from another version) is skipped."""
from __future__ import annotations

from pathlib import Path

from PyQt6.QtCore import QSettings

from galaxyview.errors import GalaxyviewError

LOOK_KEYS = {"point_size": float, "exposure": float, "colour_mode": str, "colour_map": str,
             "tone_map": str, "boxes": bool}
PANEL_TOGGLES = ("fly", "auto_orbit", "accuracy")


def open_settings() -> QSettings:
    return QSettings("galaxyview", "viewer")


def save(window, settings: QSettings) -> None:
    settings.setValue("window/geometry", window.saveGeometry())
    settings.setValue("window/splitter", window.splitter.saveState())
    look = window.look
    if look.spheres and window.galaxy_colours is not None:  # a ring's colours are its own
        look = look.with_(**dict(zip(("colour_mode", "colour_map"), window.galaxy_colours)))
    for key in LOOK_KEYS:
        settings.setValue(f"look/{key}", getattr(look, key))
    settings.setValue("look/box_levels", ",".join(str(v) for v in window.look.box_levels))
    for name in PANEL_TOGGLES:
        settings.setValue(f"panel/{name}", getattr(window.panel, name).isChecked())
    if window.source_name:
        settings.setValue("scene/last", str(window.source_name))
    settings.setValue("view/text_scale", window.text_scale)
    settings.sync()


def restore(window, settings: QSettings) -> None:
    """Geometry, panel and look into a window whose controls are connected."""
    window.set_text_scale(settings.value("view/text_scale", 1.0, type=float))
    geometry = settings.value("window/geometry")
    if geometry is not None:
        window.restoreGeometry(geometry)
    splitter = settings.value("window/splitter")
    if splitter is not None:
        window.splitter.restoreState(splitter)
    p = window.panel
    for name in PANEL_TOGGLES:
        if settings.contains(f"panel/{name}"):
            getattr(p, name).setChecked(settings.value(f"panel/{name}", False, type=bool))
    look = _stored_look(window.look, settings)
    p.point_size.set_value(look.point_size)
    p.exposure.set_value(look.exposure)
    p.colour.setCurrentText(look.colour_mode)
    p.colour_map.setCurrentText(look.colour_map)
    p.tone_map.setCurrentText(look.tone_map)
    p.boxes.setChecked(look.boxes)
    p.box_lo.setValue(look.box_levels[0])
    p.box_hi.setValue(look.box_levels[1])
    window.set_look(**{key: getattr(look, key) for key in (*LOOK_KEYS, "box_levels")})


def _stored_look(look, settings: QSettings):
    for key, kind in LOOK_KEYS.items():
        if settings.contains(f"look/{key}"):
            try:
                look = look.with_(**{key: settings.value(f"look/{key}", type=kind)})
            except (GalaxyviewError, TypeError, ValueError):
                pass
    try:
        lo, hi = (int(v) for v in str(settings.value("look/box_levels", "")).split(","))
        look = look.with_(box_levels=(lo, hi))
    except (GalaxyviewError, ValueError):
        pass
    return look


def last_source(settings: QSettings) -> str | None:
    """The scene or snapshot shown last, when it can still be opened."""
    source = settings.value("scene/last")
    if not source:
        return None
    source = str(source)
    from galaxyview.model.scene import scene_path

    try:
        return source if Path(scene_path(source)).is_file() else None
    except GalaxyviewError:
        return None
