"""The presenter's show: keys that hold the show, skip and go back a scene and toggle full
screen without taking the controls; no cursor, timeline or HUD in show mode; text that scales
for a projector; the window's F11 and projection menu."""
import re

import numpy as np
import pytest

pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6")

from test_app_show import WAIT_MS, playlist, show  # noqa: E402,F401  (fixtures)

pytestmark = pytest.mark.gui


def _px(widget) -> int:
    return int(re.search(r"font-size: (\d+)px", widget.styleSheet()).group(1))


def test_presenter_keys_hold_skip_and_go_back(show, qtbot):
    from PyQt6.QtCore import Qt

    w = show.window
    canvas = w.canvas.native
    assert canvas.cursor().shape() == Qt.CursorShape.BlankCursor
    assert not w.timeline_bar.isVisible() and not w.hud.isVisible()
    qtbot.waitUntil(lambda: w.session is not None and w.session.shown_time > 0,
                    timeout=WAIT_MS)
    qtbot.keyClick(canvas, Qt.Key.Key_Right)  # next scene, the show goes on
    assert show.active and show.index == 1 and w.sim.name == "cold-collapse"
    assert not w.splitter.widget(1).isVisible()
    qtbot.keyClick(canvas, Qt.Key.Key_PageUp)  # back a scene
    assert show.active and show.index == 0 and w.sim.name == "plummer"
    qtbot.keyClick(canvas, Qt.Key.Key_Space)  # hold the show
    assert show.active and show.paused and not w.playing
    held = show.seconds()
    qtbot.wait(1600)  # past the item's 1.2 s
    assert show.index == 0 and show.seconds() == held
    qtbot.waitUntil(lambda: "held" in show.caption.text(), timeout=WAIT_MS)
    qtbot.keyClick(canvas, Qt.Key.Key_Space)  # go on: the rest of the scene, then the next
    assert not show.paused and w.playing
    qtbot.waitUntil(lambda: show.index == 1, timeout=WAIT_MS)
    full = w.isFullScreen()
    qtbot.keyClick(canvas, Qt.Key.Key_F11)
    qtbot.waitUntil(lambda: w.isFullScreen() != full, timeout=WAIT_MS)
    assert show.active
    qtbot.keyClick(canvas, Qt.Key.Key_A)  # any other key: the controls
    assert not show.active and w.splitter.widget(1).isVisible()
    assert canvas.cursor().shape() != Qt.CursorShape.BlankCursor
    assert w.timeline_bar.isVisible()


def test_text_scale_grows_the_hud_and_captions(show, qtbot):
    w = show.window
    qtbot.waitUntil(lambda: show.caption.text() != "", timeout=WAIT_MS)
    small_caption = _px(show.caption)
    assert _px(w.hud) == 11 and "background: rgba(0, 0, 0," in w.hud.styleSheet()
    w.set_text_scale(2.0)
    assert _px(w.hud) == 22
    qtbot.waitUntil(lambda: _px(show.caption) == 2 * small_caption, timeout=WAIT_MS)
    w.set_text_scale(100.0)  # kept in range
    assert w.text_scale == 4.0


def test_window_full_screen_projection_menu_and_save_look(qtbot, tmp_path):
    from PyQt6.QtGui import QKeySequence

    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    w = MainWindow(ViewOptions(backend="cpu"))
    qtbot.addWidget(w)
    try:
        w.show()
        qtbot.waitExposed(w)
        w.open_source("plummer", 800)
        qtbot.waitUntil(lambda: w.session is not None and w.session.last is not None,
                        timeout=WAIT_MS)
        actions = {a.text(): a for m in w.menuBar().findChildren(type(w.menuBar().addMenu("x")))
                   for a in m.actions()}
        assert actions["Full screen"].shortcut() == QKeySequence("F11")
        actions["Full screen"].trigger()
        qtbot.waitUntil(w.isFullScreen, timeout=WAIT_MS)
        actions["Full screen"].trigger()
        qtbot.waitUntil(lambda: not w.isFullScreen(), timeout=WAIT_MS)
        perspective = np.asarray(w.canvas.render_image()).astype(int)
        w.projection_actions["fisheye"].trigger()
        assert w.canvas.camera.projection.name == "fisheye"
        dome = np.asarray(w.canvas.render_image()).astype(int)
        assert (dome.max(axis=-1) > 40).mean() > 0.001
        assert np.abs(dome - perspective).mean() > 1
        from galaxyview.render.look_file import load_look

        assert "Save look…" in actions
        w.set_look(exposure=3.0, colour_map="hot")
        w.save_look(tmp_path / "look.toml")
        saved = load_look(tmp_path / "look.toml")
        assert saved["exposure"] == 3.0 and saved["colour_map"] == "hot"
    finally:
        w.close()
        assert wait_for_workers(WAIT_MS)


def test_the_show_keeps_a_scenes_story_to_its_time(qtbot, tmp_path):
    """cold-collapse's story (t = 1.3, 666 steps) in a 1.5 s item: at most one batch a window
    tick (15 ms) makes 100 batches, so the scene's own pace (model/pace.py) cannot reach it;
    the show measures its batches as it runs and steps more a frame."""
    from galaxyview.app.show import ShowController
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers
    from galaxyview.model.playlist import load_playlist

    f = tmp_path / "story.toml"
    f.write_text('[show]\nfade = 0\nidle = 5\n[[item]]\nscene = "cold-collapse"\n'
                 'duration = 1.5\nn = 800\n[[item]]\nscene = "plummer"\nduration = 30\n'
                 'n = 800\n')
    w = MainWindow(ViewOptions(backend="cpu"))
    qtbot.addWidget(w)
    show = ShowController(w, load_playlist(f), fullscreen=False)
    try:
        show.start()
        qtbot.waitExposed(w)
        assert show.pacer is not None and show.pacer.story_time == 1.3
        start = w.panel.steps_per_frame.value()
        assert start * 100 < 666
        qtbot.waitUntil(lambda: show.index != 0 or w.panel.steps_per_frame.value() > start,
                        timeout=WAIT_MS)
        assert show.index == 0 and w.panel.steps_per_frame.value() > start
        qtbot.waitUntil(lambda: show.index == 1, timeout=WAIT_MS)
        assert show.pacer is None  # plummer has no story_time
    finally:
        w.close()
        assert wait_for_workers(WAIT_MS)


def test_a_dome_show_from_the_command_line_options(qtbot, tmp_path, playlist):
    import argparse

    from galaxyview.app.show import ShowController
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers
    from galaxyview.cli import common, view
    from galaxyview.errors import ParameterError
    from galaxyview.render.projections import WIDE_FIT_DEG

    parser = argparse.ArgumentParser()
    view.add_show_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["show", "--projection", "fisheye", "--fov", "210", "--tilt", "30"])
    projection = common.projection_of(args)
    bad = parser.parse_args(["show", "--projection", "fisheye", "--fov", "100"])
    with pytest.raises(ParameterError, match="180..230"):
        common.projection_of(bad)
    w = MainWindow(ViewOptions(backend="cpu", projection=projection))
    qtbot.addWidget(w)
    show = ShowController(w, playlist, fullscreen=False)
    try:
        show.start()
        qtbot.waitExposed(w)
        cam = w.canvas.camera
        assert (cam.projection.name, cam.projection.fov, cam.projection.tilt) == \
            ("fisheye", 210.0, 30.0)
        assert cam.fov_deg == WIDE_FIT_DEG and w.projection_actions["fisheye"].isChecked()
        qtbot.waitUntil(lambda: w.session is not None and w.session.shown_time > 0,
                        timeout=WAIT_MS)
        rgb = np.asarray(w.canvas.render_image()).astype(int)
        h, wd = rgb.shape[:2]
        yy, xx = np.mgrid[:h, :wd]
        outside = np.hypot(xx + 0.5 - wd / 2, yy + 0.5 - h / 2) > min(h, wd) / 2 + 6
        lit = rgb.max(axis=-1) > 40
        assert lit.mean() > 0.002 and not lit[outside].any()  # a dome master
        w.set_projection("perspective")
        assert cam.fov_deg == 45.0
    finally:
        w.close()
        assert wait_for_workers(WAIT_MS)
