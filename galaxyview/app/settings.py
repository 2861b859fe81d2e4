"""What the viewer keeps between runs (QSettings, e.g. ~/.config/galaxyview/viewer.conf): the
window's geometry, the panel's width, the control table's rows with a settings key (look
fields and panel toggles: app/control_table.py), the tree boxes' levels and the last scene.

A value that no longer makes sense (edited by hand, from another version) is skipped."""
from __future__ import annotations

from pathlib import Path

from PyQt6.QtCore import QSettings

from galaxyview.app import control_wiring, controls
from galaxyview.errors import GalaxyviewError

TYPES = {"slider": float, "spin": int, "combo": str, "check": bool}


def open_settings() -> QSettings:
    return QSettings("galaxyview", "viewer")


def kept(table) -> list:
    """The rows of the control table kept between runs (a settings key each)."""
    return [row for row in table if row.setting]


def save(window, settings: QSettings) -> None:
    settings.setValue("window/geometry", window.saveGeometry())
    settings.setValue("window/splitter", window.splitter.saveState())
    look = window.look
    if look.spheres and window.galaxy_colours is not None:  # a ring's colours are its own
        look = look.with_(**dict(zip(("colour_mode", "colour_map"), window.galaxy_colours)))
    for row in kept(window.panel.table):
        settings.setValue(row.setting, getattr(look, row.field) if row.sets == "look"
                          else controls.value(window.panel.controls[row.name]))
    settings.setValue("look/box_levels", ",".join(str(v) for v in window.look.box_levels))
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
    look, others = _stored(window.look, p.table, settings)
    for row, value in others:
        controls.show(p.controls[row.name], value)
        control_wiring.apply(window, row, value)
    looks = [row for row in kept(p.table) if row.sets == "look"]
    for row in looks:
        controls.show(p.controls[row.name], getattr(look, row.field))
    controls.show(p.box_lo, look.box_levels[0])
    controls.show(p.box_hi, look.box_levels[1])
    window.set_look(**{key: getattr(look, key) for key in (*(r.field for r in looks),
                                                             "box_levels")})


def _stored(look, table, settings: QSettings):
    """The look with the stored look fields, and (row, value) of the other rows kept; a value
    that does not fit its row is skipped."""
    others = []
    for row in kept(table):
        if not settings.contains(row.setting):
            continue
        try:
            value = settings.value(row.setting, type=TYPES[row.kind])
            if row.sets == "look":
                look = look.with_(**{row.field: value})
            elif _fits(row, value):
                others.append((row, value))
        except (GalaxyviewError, TypeError, ValueError):
            pass
    try:
        lo, hi = (int(v) for v in str(settings.value("look/box_levels", "")).split(","))
        look = look.with_(box_levels=(lo, hi))
    except (GalaxyviewError, ValueError):
        pass
    return look, others


def _fits(row, value) -> bool:
    if row.kind == "combo":
        return value in row.choices
    if row.kind in ("slider", "spin"):
        return row.range[0] <= value <= row.range[1]
    return True


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
