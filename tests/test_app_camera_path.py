"""Camera keyframes in the window (add, look from, move, delete, save, load, follow) and the same
frames from the window and from headless recording for the same camera path."""
import numpy as np
import pytest

pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6")

from galaxyview.render.camera_path import CameraPath, Keyframe  # noqa: E402

pytestmark = pytest.mark.gui

WAIT_MS = 20_000
SCENE, N = "cold-collapse", 1500
PATH = CameraPath([Keyframe(0.0, (0.0, -4.0, 1.5), (0.0, 0.0, 0.0), 45.0),
                   Keyframe(0.01, (3.0, -2.0, 0.5), (0.1, 0.0, 0.0), 35.0)])


@pytest.fixture
def window(qtbot):
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    w = MainWindow(ViewOptions(backend="cpu"))
    w.open_source(SCENE, N)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.energy_error is not None, timeout=WAIT_MS)
    yield w
    w.close()
    assert wait_for_workers(WAIT_MS)


def _step(w, qtbot):
    before = w.session.shown_time
    w.single_step()
    qtbot.waitUntil(lambda: w.session.shown_time > before and not w.session.busy,
                    timeout=WAIT_MS)


def _painted(w, qtbot):
    drawn = w.canvas.frames_drawn
    w.canvas.update()
    qtbot.waitUntil(lambda: w.canvas.frames_drawn > drawn, timeout=WAIT_MS)


@pytest.mark.slow
def test_add_select_move_delete_save_load_and_follow(window, qtbot, tmp_path):
    w, k = window, window.panel.keyframes
    cam = w.canvas.camera
    w.add_keyframe()
    first_eye = cam.eye.copy()
    _step(w, qtbot)
    cam.orbit(70.0, 15.0)
    cam.zoom(1.4)
    w.add_keyframe()
    t1 = w.session.shown_time
    assert [kf.time for kf in w.camera_path.keyframes] == [0.0, t1] and k.list.count() == 2
    k.list.setCurrentRow(0)  # look from it
    assert np.allclose(cam.eye, first_eye)
    cam.orbit(-30.0)
    k.time.setValue(t1 / 2)
    k.set.click()  # move keyframe 0 to this view and time
    kf = w.camera_path.keyframes[0]
    assert kf.time == k.time.value() == pytest.approx(t1 / 2, abs=1e-6)
    assert np.allclose(kf.eye, cam.eye)
    k.list.setCurrentRow(1)
    k.set.click()  # the time box shows t1 rounded: t1 stays
    assert w.camera_path.keyframes[1].time == t1
    w.add_keyframe()  # at t1 again: replaces
    assert len(w.camera_path) == 2
    k.list.setCurrentRow(0)
    k.delete.click()
    assert len(w.camera_path) == 1 and k.list.count() == 1

    out = tmp_path / "path.toml"
    w.set_camera_path(PATH)
    assert w.save_camera_path(out)
    assert not w.save_camera_path(out) and "already exists" in w.last_error
    w.set_camera_path(CameraPath())
    assert w.load_camera_path(out) and w.camera_path.keyframes == PATH.keyframes
    (tmp_path / "bad.toml").write_text("[[keyframe]]\ntime = 0\n")
    assert not w.load_camera_path(tmp_path / "bad.toml") and "eye is missing" in w.last_error

    k.follow.setChecked(True)
    _step(w, qtbot)
    _painted(w, qtbot)
    eye, target, fov = PATH.at(w.session.shown_time)
    assert np.allclose(cam.eye, eye, atol=1e-6) and cam.fov_deg == pytest.approx(fov)


@pytest.mark.slow
def test_window_and_headless_recording_give_the_same_frames(window, qtbot):
    from galaxyview.movie.recorder import RecordOptions, record_frames
    from galaxyview.render.offscreen import OffscreenRenderer
    from galaxyview.simulation import open_simulation

    size, frames = (160, 96), 4
    w = window
    w.set_camera_path(PATH)
    w.panel.keyframes.follow.setChecked(True)
    shown = []
    for i in range(frames):
        if i:
            _step(w, qtbot)
        _painted(w, qtbot)
        shown.append(w.canvas.render_image(size))

    class Frames(list):
        def add_frame(self, rgb, copy=True):
            self.append(rgb.copy())

    sim = open_simulation(SCENE, "cpu", N)
    recorded = Frames()
    with OffscreenRenderer(*size) as r:
        r.attach(sim.engine)
        opts = RecordOptions(frames, 30, size, 1, camera_path=PATH, overlap=False).validate()
        assert record_frames(sim.engine, r, recorded, opts)[0] == frames
    sim.close()
    for a, b in zip(shown, recorded):
        assert (a.max(axis=-1) > 40).mean() > 0.005
        diff = np.abs(a.astype(int) - b.astype(int))
        assert diff.mean() < 0.2 and diff.max() <= 2, (diff.mean(), diff.max())
    assert not np.array_equal(recorded[0], recorded[-1])  # the camera moved


def test_saving_into_a_read_only_folder_says_so(window, monkeypatch, tmp_path):
    """A read-only file system refuses the temporary file and its removal alike (EROFS)."""
    import errno
    import os

    def refuse(path, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(path))

    monkeypatch.setattr(os, "open", refuse)  # (the temporary file is made with os.open)
    monkeypatch.setattr(os, "unlink", refuse)
    window.set_camera_path(PATH)
    out = tmp_path / "path.toml"
    assert not window.save_camera_path(out, overwrite=True)
    assert window.last_error == f"{out}: cannot write it (Read-only file system)"
    assert window.error_dialog.isVisible() and not out.exists()
