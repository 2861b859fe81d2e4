"""The audience output (app/audience.py): a frameless full-screen window on another screen
showing the canvas's view at that screen's size, the operator's window unchanged."""
import numpy as np
import pytest

pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6")

from galaxyview.errors import GalaxyviewError  # noqa: E402

pytestmark = pytest.mark.gui

WAIT_MS = 30_000


class _FakeScreen:
    """A second screen beside the first (Xvfb gives one)."""

    def __init__(self, x, w, h):
        from PyQt6.QtCore import QRect

        self._geometry = QRect(x, 0, w, h)

    def geometry(self):
        return self._geometry

    def devicePixelRatio(self):
        return 1.0

    def name(self):
        return "fake"


def test_audience_window_on_the_second_screen(qtbot, monkeypatch):
    from PyQt6.QtCore import Qt
    from PyQt6.QtGui import QGuiApplication

    from galaxyview.app import audience
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    first = QGuiApplication.primaryScreen()
    with pytest.raises(GalaxyviewError, match="no screen 1"):
        audience.audience_screen(len(QGuiApplication.screens()))  # one past the last
    monkeypatch.setattr(QGuiApplication, "screens",
                        staticmethod(lambda: [first, _FakeScreen(first.geometry().width(),
                                                                 320, 200)]))
    screen = audience.audience_screen(1)
    w = MainWindow(ViewOptions(backend="cpu"))
    w.open_source("plummer", 3000)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    own_after_draw = w.canvas.after_draw
    a = audience.AudienceWindow(w, screen)
    try:
        a.open()
        assert a.isFullScreen()
        assert a.windowFlags() & Qt.WindowType.FramelessWindowHint
        assert a.geometry() == screen.geometry()
        assert a.size_px == (320, 200)
        w.set_playing(True)  # the canvas paints each batch, and the audience with it
        qtbot.waitUntil(lambda: a.frames >= 2, timeout=WAIT_MS)
        w.set_playing(False)
        picture = a.picture.pixmap().toImage()
        assert (picture.width(), picture.height()) == (320, 200)
        seen = np.array([[picture.pixelColor(x, y).lightness() for x in range(0, 320, 4)]
                         for y in range(0, 200, 4)])
        assert (seen > 40).mean() > 0.002  # the particles, lit
        assert w.canvas.native.window() is w  # the canvas stays with the operator
    finally:
        a.close()
    assert w.canvas.after_draw == own_after_draw  # given back
    again = audience.AudienceWindow(w, screen)
    seen = []
    again.decorate = lambda rgb: seen.append(rgb.shape)
    again.open()
    w.set_playing(True)
    qtbot.waitUntil(lambda: again.frames >= 1, timeout=WAIT_MS)
    w.set_playing(False)
    assert seen[0] == (200, 320, 3)
    w.close()  # the operator's window closes: the audience output with it
    assert not again.isVisible() and w.canvas.after_draw == own_after_draw
    assert wait_for_workers(WAIT_MS)


def test_show_refuses_a_screen_that_is_not_there(capsys, tmp_path):
    import argparse

    from galaxyview.cli import view

    parser = argparse.ArgumentParser()
    view.add_show_parser(parser.add_subparsers(dest="command"))
    f = tmp_path / "one.toml"
    f.write_text('[[item]]\nscene = "plummer"\nn = 500\n')
    args = parser.parse_args(["show", str(f), "--audience-screen", "7", "--backend", "cpu",
                              "--windowed", "--items", "1"])
    assert view.run_show(args) == 2
    assert "no screen 7 for the audience output" in capsys.readouterr().err


def test_record_button_records_the_audience_output(qtbot, monkeypatch, tmp_path):
    """With an audience output open, Record writes its pictures (its size, its decorations);
    closed, the canvas again."""
    pytest.importorskip("imageio_ffmpeg", reason="recording needs imageio-ffmpeg's encoder")
    import imageio

    from galaxyview.app import audience
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    w = MainWindow(ViewOptions(backend="cpu"))
    w.open_source("plummer", 1500)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    a = audience.AudienceWindow(w, _FakeScreen(w.geometry().right() + 1, 322, 181))
    a.decorate = lambda rgb: rgb.__setitem__((slice(0, 20), slice(0, 30)), 255)  # a white mark
    a.open()
    assert w.audience is a
    w.set_playing(True)
    qtbot.waitUntil(lambda: a.frames >= 2, timeout=WAIT_MS)  # the particles are there
    out = tmp_path / "audience.mp4"
    assert w.start_recording(out, fps=20)
    assert w.recorder.size == (322, 180)  # even sides for H.264
    assert w.hud_info().recording == "322x180 audience"
    assert w.panel.record.text() == "Stop recording (322x180 audience)"
    qtbot.waitUntil(lambda: a.frames >= 5 and w.recorder.frames >= 5, timeout=WAIT_MS)
    w.set_playing(False)
    assert w.stop_recording() == out
    with imageio.get_reader(out, "ffmpeg") as movie:
        frames = [f for f in movie]
        size = movie.get_meta_data()["size"]
    assert tuple(size) == (322, 180) and len(frames) >= 5
    for f in frames:
        assert f[2:18, 2:28].min() > 200  # the audience's picture, decorated
        assert (f[40:].max(axis=-1) > 40).mean() > 0.002  # the particles, lit
    a.close()
    assert w.audience is None
    assert w.start_recording(tmp_path / "window.mp4", fps=20)
    cw, ch = w.canvas.physical_size
    assert w.recorder.size == (cw - cw % 2, ch - ch % 2)  # the canvas again
    assert w.stop_recording() is not None
    w.close()
    assert wait_for_workers(WAIT_MS)


def test_the_viewer_opens_an_audience_output(monkeypatch, tmp_path, capsys):
    """`galaxyview SCENE --audience-screen N`: the viewer (not only the show) sends its picture
    to the audience screen while it runs, and closes it with the window."""
    import argparse

    from galaxyview.app import audience
    from galaxyview.cli import view

    seen = []
    monkeypatch.setattr(audience, "audience_screen", lambda i: _FakeScreen(2000, 320, 200))
    close = audience.AudienceWindow.close

    def closing(self):
        seen.append((self.size_px, self.frames))
        return close(self)

    monkeypatch.setattr(audience.AudienceWindow, "close", closing)
    parser = argparse.ArgumentParser()
    view.add_view_arguments(parser)
    shot = tmp_path / "w.png"
    args = parser.parse_args(["plummer", "--backend", "cpu", "--n", "800", "--audience-screen",
                              "1", "--screenshot", str(shot), "--frames", "5"])
    assert view.run_view(args) == 0 and shot.exists()
    assert seen and seen[0][0] == (320, 200) and seen[0][1] >= 1


def test_the_viewer_refuses_a_screen_that_is_not_there(capsys):
    import argparse

    from galaxyview.cli import view

    parser = argparse.ArgumentParser()
    view.add_view_arguments(parser)
    args = parser.parse_args(["plummer", "--backend", "cpu", "--n", "500",
                              "--audience-screen", "7"])
    assert view.run_view(args) == 2
    assert "no screen 7 for the audience output" in capsys.readouterr().err
