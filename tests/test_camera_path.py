"""Camera paths (render/camera_path.py): keyframes through which the camera moves smoothly, kept
as TOML; no jump in position or direction at keyframes."""
import numpy as np
import pytest

from galaxyview.errors import ParameterError, SceneError
from galaxyview.render.camera import Camera
from galaxyview.render.camera_path import CameraPath, Keyframe

FRAMES = [Keyframe(0.0, (0, -100, 40), (0, 0, 0), 45.0),
          Keyframe(10.0, (80, -20, 10), (5, 0, 0), 35.0),
          Keyframe(15.0, (30, 60, 30), (10, 5, 0), 60.0),
          Keyframe(30.0, (-50, 10, 80), (0, 0, 0), 40.0)]


def test_passes_through_every_keyframe_and_holds_at_the_ends():
    path = CameraPath(reversed(FRAMES))  # sorted by time
    assert [k.time for k in path.keyframes] == [0, 10, 15, 30]
    for k in FRAMES:
        eye, target, fov = path.at(k.time)
        assert np.allclose(eye, k.eye) and np.allclose(target, k.target) and fov == pytest.approx(k.fov)
    assert np.allclose(path.at(-5)[0], FRAMES[0].eye) and np.allclose(path.at(99)[0], FRAMES[-1].eye)
    one = CameraPath(FRAMES[:1])
    assert np.allclose(one.at(123.0)[0], FRAMES[0].eye)


def _direction(path, t):
    eye, target, _ = path.at(t)
    d = target - eye
    return d / np.linalg.norm(d)


@pytest.mark.parametrize("h", [1e-3, 1e-4])
def test_no_jump_in_position_velocity_or_direction_at_keyframes(h):
    path = CameraPath(FRAMES)
    ts = np.linspace(0, 30, 3001)
    eyes = np.array([path.at(t)[0] for t in ts])
    step = np.linalg.norm(np.diff(eyes, axis=0), axis=1)
    for k in FRAMES[1:-1]:
        t = k.time
        left = (path.at(t)[0] - path.at(t - h)[0]) / h
        right = (path.at(t + h)[0] - path.at(t)[0]) / h
        speed = max(np.linalg.norm(left), 1.0)
        assert np.linalg.norm(left - right) < 50 * h * speed  # velocity continuous: O(h)
        turn = np.degrees(np.arccos(np.clip(_direction(path, t - h) @ _direction(path, t + h),
                                            -1, 1)))
        typical = np.degrees(np.arccos(np.clip(_direction(path, t + 0.5) @
                                               _direction(path, t + 0.5 + 2 * h), -1, 1)))
        assert turn < 5 * typical + 1e-3  # the view turns at a keyframe as it does elsewhere
    # no sample-to-sample jump anywhere: steps vary smoothly
    assert step.max() < 3 * np.median(step) + 1e-9
    fov = np.array([path.at(t)[2] for t in ts])
    assert fov.min() >= 35.0 - 1e-9 and fov.max() <= 60.0 + 1e-9  # PCHIP: no overshoot


def test_ends_start_and_stop_gently():
    path = CameraPath(FRAMES)
    v0 = (path.at(1e-4)[0] - path.at(0)[0]) / 1e-4
    assert np.linalg.norm(v0) < 0.01 * np.linalg.norm(np.subtract(FRAMES[1].eye, FRAMES[0].eye))


def test_apply_puts_the_camera_on_the_path():
    path = CameraPath(FRAMES)
    cam = Camera()
    cam.follow((1.0, 2.0, 3.0))
    for t in (0.0, 7.3, 15.0, 22.0):
        path.apply(cam, t)
        eye, target, fov = path.at(t)
        assert np.allclose(cam.eye, eye, atol=1e-6) and np.allclose(cam.centre, target)
        assert cam.fov_deg == pytest.approx(fov) and not cam.following
    k = Keyframe.from_camera(cam, 22.0)
    assert np.allclose(k.eye, cam.eye) and k.fov == cam.fov_deg


def test_editing_gives_new_paths():
    path = CameraPath(FRAMES[:2])
    added = path.with_keyframe(FRAMES[2])
    assert len(path) == 2 and len(added) == 3
    moved = added.replaced(1, Keyframe(12.0, (1, 2, 3), (0, 0, 0)))
    assert [k.time for k in moved.keyframes] == [0, 12, 15]
    assert [k.time for k in moved.without(0).keyframes] == [12, 15]
    assert len(added.with_keyframe(Keyframe(10.0, (9, 9, 9), (0, 0, 0)))) == 3  # same time


def test_save_and_load_round_trip_and_no_overwrite(tmp_path):
    path = CameraPath(FRAMES)
    out = path.save(tmp_path / "fly.toml")
    back = CameraPath.load(out)
    assert back.keyframes == path.keyframes
    with pytest.raises(ParameterError, match="already exists"):
        path.save(out)
    CameraPath(FRAMES[:2]).save(out, overwrite=True)
    assert len(CameraPath.load(out)) == 2


@pytest.mark.parametrize("text, words", [
    ("", ["keyframe is missing"]),
    ("[[keyframe]]\ntime = 0\neye = [0, 0, 1]\n", ["keyframe[0].target is missing"]),
    ("[[keyframe]]\ntime = 0\neye = [0, 0, 1]\ntarget = [0, 0]\n", ["target", "3 finite numbers"]),
    ("[[keyframe]]\ntime = 0\neye = [0, 0, 1]\ntarget = [0, 0, 1]\n", ["eye sits on the target"]),
    ("[[keyframe]]\ntime = 0\neye = [0, 0, 1]\ntarget = [0, 0, 0]\nfov = 200\n", ["fov", "[1, 170]"]),
    ("[[keyframe]]\ntime = 0\neye = [0, 0, 1]\ntarget = [0, 0, 0]\nfob = 20\n", ["unknown key", "fob"]),
    ("[[keyframe]]\ntime = 1\neye = [0, 0, 1]\ntarget = [0, 0, 0]\n"
     "[[keyframe]]\ntime = 1\neye = [0, 0, 2]\ntarget = [0, 0, 0]\n", ["same time"]),
    ("[[keyframe]\n", ["TOML syntax error"]),
])
def test_bad_files_say_what_is_wrong(tmp_path, text, words):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(SceneError) as info:
        CameraPath.load(f)
    assert str(f) in str(info.value) and all(w in str(info.value) for w in words), info.value
    with pytest.raises(SceneError, match="no such camera path"):
        CameraPath.load(tmp_path / "missing.toml")
