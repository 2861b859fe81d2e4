"""Show mode: a playlist loops full screen with camera programmes, captions and cross-fades;
input hands control back and idleness resumes the show."""
import subprocess
import sys

import pytest

pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6")

from galaxyview.errors import SceneError  # noqa: E402
from galaxyview.model.playlist import load_playlist  # noqa: E402

pytestmark = pytest.mark.gui

WAIT_MS = 30_000
PLAYLIST = """\
[show]
fade = 0.3
idle = 0.6
[[item]]
scene = "plummer"
duration = 1.2
n = 800
orbit_deg_per_s = 30
[[item.caption]]
time = 0.0
text = "A star cluster in equilibrium"
[[item]]
scene = "cold-collapse"
duration = 1.2
camera = "fly"
n = 800
"""


@pytest.fixture
def playlist(tmp_path):
    f = tmp_path / "two.toml"
    f.write_text(PLAYLIST)
    return load_playlist(f)


@pytest.fixture
def show(qtbot, playlist):
    from galaxyview.app.show import ShowController
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    w = MainWindow(ViewOptions(backend="cpu"))
    qtbot.addWidget(w)
    s = ShowController(w, playlist, fullscreen=False)
    s.start()
    qtbot.waitExposed(w)
    yield s
    w.close()
    assert wait_for_workers(WAIT_MS)


@pytest.mark.slow
def test_cycles_the_playlist_with_captions_fade_and_camera(show, qtbot):
    w = show.window
    assert show.index == 0 and w.sim.name == "plummer" and w.playing
    assert not w.splitter.widget(1).isVisible() and not w.menuBar().isVisible()
    azimuth = w.canvas.camera.azimuth
    qtbot.waitUntil(lambda: "A star cluster in equilibrium" in show.caption.text(),
                    timeout=WAIT_MS)
    assert "plummer" in show.caption.text() and "t = " in show.caption.text()
    qtbot.waitUntil(lambda: w.canvas.camera.azimuth != azimuth, timeout=WAIT_MS)  # orbiting
    qtbot.waitUntil(lambda: show.index == 1, timeout=WAIT_MS)
    assert w.sim.name == "cold-collapse" and show.fade.isVisible()  # cross-fading
    qtbot.waitUntil(lambda: not show.fade.isVisible(), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: show.index == 0 and show.shown_items == 3, timeout=WAIT_MS)
    assert w.sim.name == "plummer" and w.sim.engine.steps_done >= 0


@pytest.mark.slow
def test_input_hands_control_back_and_idleness_resumes(show, qtbot):
    from PyQt6.QtCore import Qt

    w = show.window
    qtbot.waitUntil(lambda: w.session is not None and w.session.shown_time > 0,
                    timeout=WAIT_MS)
    qtbot.keyClick(w.canvas.native, Qt.Key.Key_A)
    assert not show.active and w.splitter.widget(1).isVisible() and w.menuBar().isVisible()
    item, playing = show.index, w.playing
    for _ in range(4):  # 1.6 s, past the item's duration, never 0.6 s idle
        qtbot.wait(400)
        qtbot.keyClick(w.canvas.native, Qt.Key.Key_Shift)
        assert not show.active and show.index == item
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=WAIT_MS)
    qtbot.keyClick(w, Qt.Key.Key_Space)  # keys now reach the window: space pauses
    assert w.playing != playing
    qtbot.waitUntil(lambda: show.active, timeout=WAIT_MS)  # 0.6 s idle: the show goes on
    assert show.index != item and w.playing and not w.splitter.widget(1).isVisible()


@pytest.mark.slow
def test_cli_show_plays_k_scenes_and_bad_playlists_are_one_line(tmp_path):
    f = tmp_path / "two.toml"
    f.write_text(PLAYLIST)
    r = subprocess.run([sys.executable, "-m", "galaxyview", "show", str(f), "--backend", "cpu",
                        "--windowed", "--items", "3"], capture_output=True, text=True,
                       timeout=120, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    shown = [line for line in r.stdout.splitlines() if line.startswith("show: ")]
    assert [line.split()[1:3] for line in shown] == [["1/2", "plummer"], ["2/2", "cold-collapse"],
                                                     ["1/2", "plummer"]]
    bad = tmp_path / "bad.toml"
    bad.write_text('[[item]]\nscene = "plummer"\ncamera = "spin"\n')
    r = subprocess.run([sys.executable, "-m", "galaxyview", "show", str(bad)],
                       capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert r.returncode == 2 and "item[0].camera" in r.stderr and "Traceback" not in r.stderr


def _env(tmp_path):
    import os

    return dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))


@pytest.mark.parametrize("text, words", [
    ("", ["item is missing"]),
    ('[[item]]\nscene = "plummer"\ncamera = "path"\n', ["camera_path", 'camera = "path"']),
    ('[[item]]\nscene = "plummer"\nduration = 0\n', ["duration", "> 0"]),
    ('[show]\nfade = -1\n[[item]]\nscene = "plummer"\n', ["show.fade"]),
])
def test_playlist_errors(tmp_path, text, words):
    f = tmp_path / "p.toml"
    f.write_text(text)
    with pytest.raises(SceneError) as info:
        load_playlist(f)
    assert all(w in str(info.value) for w in words), info.value


def test_the_shipped_default_playlist_names_shipped_scenes():
    from galaxyview.model.scene import load_scene

    p = load_playlist()
    assert len(p.items) >= 2 and p.source.name == "default.toml"
    for item in p.items:
        load_scene(item.scene)
        assert item.captions and item.captions[0].time == 0.0


@pytest.mark.slow
def test_the_next_scene_after_a_follow_item_is_framed_and_drawn(qtbot, tmp_path):
    """The follow camera's point belongs to its item's engine, closed when the next opens."""
    from galaxyview.app.show import ShowController
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    f = tmp_path / "follow.toml"
    f.write_text('[show]\nfade = 0\nidle = 5\n[[item]]\nscene = "antennae"\nduration = 1\n'
                 'n = 800\ncamera = "follow"\n[[item]]\nscene = "plummer"\nduration = 30\n'
                 'n = 800\n')
    w = MainWindow(ViewOptions(backend="cpu"))
    qtbot.addWidget(w)
    show = ShowController(w, load_playlist(f), fullscreen=False)
    show.start()
    qtbot.waitExposed(w)
    assert w.canvas.camera.following
    old = w.session
    qtbot.waitUntil(lambda: old.last is not None and old.last.steps_done > 0, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: show.index == 1, timeout=WAIT_MS)
    assert not w.canvas.camera.following
    drawn = w.canvas.frames_drawn
    qtbot.waitUntil(lambda: w.canvas.frames_drawn > drawn + 3, timeout=WAIT_MS)
    w.close()
    assert wait_for_workers(WAIT_MS)


def test_a_ring_scene_caption_gives_its_time_in_seconds(qtbot, tmp_path):
    from galaxyview.app.show import ShowController
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    f = tmp_path / "ring.toml"
    f.write_text('[[item]]\nscene = "ring-equilibrium"\nduration = 30\nn = 500\n')
    w = MainWindow(ViewOptions(backend="cpu"))
    qtbot.addWidget(w)
    show = ShowController(w, load_playlist(f), fullscreen=False)
    show.start()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.session.shown_time > 0 and "ring-equilibrium" in
                    show.caption.text(), timeout=WAIT_MS)
    w.set_playing(False)  # the caption catches up with the time shown
    qtbot.waitUntil(lambda: f"t = {w.session.shown_time:,.0f} s" in show.caption.text(),
                    timeout=WAIT_MS)
    assert "N-body" not in show.caption.text()
    w.close()
    assert wait_for_workers(WAIT_MS)


@pytest.mark.slow
def test_the_show_names_the_galaxies_and_shows_a_scale_bar(qtbot, tmp_path):
    """A playlist's labels and scale_bar: the overlay's names sit where the canvas's camera
    projects the galaxies' centres (render/annotations.py), its bar is that camera's."""
    import numpy as np

    from galaxyview.app.show import ShowController
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers
    from galaxyview.render.annotations import galaxy_labels, scale_bar

    f = tmp_path / "names.toml"
    f.write_text('[show]\nlabels = true\nscale_bar = true\n[[item]]\nscene = "antennae"\n'
                 'duration = 30\nn = 2000\norbit_deg_per_s = 0\n')
    playlist = load_playlist(f)
    assert playlist.labels and playlist.scale_bar
    w = MainWindow(ViewOptions(backend="cpu"))
    qtbot.addWidget(w)
    s = ShowController(w, playlist, fullscreen=False)
    s.start()
    qtbot.waitExposed(w)
    try:
        a = s.annotations
        qtbot.waitUntil(lambda: len(a.labels) == 2 and a.bar is not None, timeout=WAIT_MS)
        assert [label.text for label in a.labels] == ["NGC 4038", "NGC 4039"]
        assert a.bar.unit == "kpc" and a.isVisible()
        size = (a.width(), a.height())
        assert a.bar == scale_bar(w.canvas.camera, size, w.sim.units)
        want = galaxy_labels(w.canvas.camera, size, a.centres, a.names)
        assert np.allclose([(q.x, q.y) for q in a.labels], [(q.x, q.y) for q in want])
        picture = a.grab().toImage()
        x, y = (round(v) for v in (a.labels[0].x, a.labels[0].y))
        assert picture.pixelColor(x, y).lightness() > 200  # the mark at the centre
        qtbot.waitUntil(lambda: s.caption.isVisible(), timeout=WAIT_MS)
        rgb = np.zeros((2 * a.height(), 2 * a.width(), 3), np.uint8)  # an audience picture
        s.decorate(rgb)  # names, bar and caption burnt in, at its size
        cx, cy = (round(2 * v) for v in (a.labels[0].x, a.labels[0].y))
        assert (rgb[cy - 1:cy + 2, cx - 1:cx + 2].min(axis=-1) == 255).any()  # the mark
        assert (rgb[-40:, -round(a.bar.pixels * 2):].max(axis=-1) == 255).any()  # the bar
        assert (rgb[-rgb.shape[0] // 8:, :rgb.shape[1] // 4].max(axis=-1) == 255).any()  # caption
    finally:
        w.close()
        assert wait_for_workers(WAIT_MS)
    f.write_text('[show]\nlabels = 3\n[[item]]\nscene = "plummer"\n')
    with pytest.raises(SceneError, match="labels"):
        load_playlist(f)
