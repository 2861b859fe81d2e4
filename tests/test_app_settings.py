"""The viewer keeps its geometry, look, panel toggles and last scene between runs (QSettings)."""
import pytest

pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6")

pytestmark = pytest.mark.gui

WAIT_MS = 20_000


def _settings(path):
    from PyQt6.QtCore import QSettings

    return QSettings(str(path), QSettings.Format.IniFormat)


def _window(qtbot, settings, source=None):
    from galaxyview.app.window import MainWindow, ViewOptions

    w = MainWindow(ViewOptions(backend="cpu"), settings)
    qtbot.addWidget(w)
    if source:
        w.open_source(source, 600)
    w.show()
    qtbot.waitExposed(w)
    return w


def _close(w):
    from galaxyview.app.window import wait_for_workers

    w.close()
    assert wait_for_workers(WAIT_MS)


def test_look_panel_geometry_and_scene_come_back(qtbot, tmp_path):
    path = tmp_path / "viewer.conf"
    w = _window(qtbot, _settings(path), "cold-collapse")
    assert w.settings_source() is None  # nothing kept yet
    p = w.panel
    p.colour.setCurrentText("speed")
    p.tone_map.setCurrentText("reinhard")
    p.boxes.setChecked(True)
    p.box_hi.setValue(6)
    p.exposure.spin.setValue(2.5)
    p.auto_orbit.setChecked(True)
    w.resize(700, 500)
    qtbot.waitUntil(lambda: w.look.exposure == pytest.approx(2.5), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: (w.width(), w.height()) == (700, 500), timeout=WAIT_MS)
    sizes = w.splitter.sizes()
    _close(w)

    w = _window(qtbot, _settings(path))
    try:
        assert (w.look.colour_mode, w.look.tone_map, w.look.boxes) == ("speed", "reinhard", True)
        assert w.look.box_levels == (0, 6) and w.look.exposure == pytest.approx(2.5)
        assert w.panel.colour.currentText() == "speed" and w.panel.auto_orbit.isChecked()
        assert (w.width(), w.height()) == (700, 500) and w.splitter.sizes() == sizes
        assert w.settings_source() == "cold-collapse"
    finally:
        _close(w)


def test_bad_or_stale_values_are_skipped(qtbot, tmp_path):
    path = tmp_path / "viewer.conf"
    s = _settings(path)
    s.setValue("look/exposure", "bright")
    s.setValue("look/colour_mode", "plaid")
    s.setValue("look/point_size", 5.0)
    s.setValue("look/box_levels", "7,2")
    s.setValue("scene/last", str(tmp_path / "deleted.toml"))
    s.sync()
    w = _window(qtbot, _settings(path))
    try:
        assert w.look.exposure == 1.0 and w.look.colour_mode == "component"
        assert w.look.point_size == 5.0 and w.look.box_levels == (0, 4)
        assert w.settings_source() is None
    finally:
        _close(w)
