"""`galaxyview [SCENE] ... --screenshot FILE.png --frames K` and its errors, as a user runs it."""
import os
import re
import signal
import subprocess
import sys
import time

import imageio.v3 as iio
import pytest

pytestmark = pytest.mark.gui


def galaxyview(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "galaxyview", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_screenshot_runs_k_frames_and_saves_the_canvas(tmp_path):
    out = tmp_path / "shot.png"
    r = galaxyview("plummer", "--backend", "cpu", "--n", "1500", "--theta", "0.6",
                   "--screenshot", str(out), "--frames", "3")
    assert r.returncode == 0, r.stderr
    assert "3 frames" in r.stdout and "host upload" in r.stdout
    img = iio.imread(out)
    assert img.ndim == 3 and (img[..., :3].max(axis=-1) > 40).mean() > 0.002


@pytest.mark.slow
def test_no_display_says_what_to_do():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY",
                                                             "QT_QPA_PLATFORM")}
    r = galaxyview("plummer", "--backend", "cpu", env=env)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "DISPLAY" in lines[0] and "xvfb-run" in lines[0]


@pytest.mark.parametrize("args, message", [
    (["no-such-scene"], "unknown scene"),
    (["plummer", "--screenshot", "/no/such/folder/x.png"], "does not exist"),
    (["plummer", "--screenshot", "shot.jpg"], ".png"),
])
@pytest.mark.slow
def test_bad_input_is_one_clear_line(args, message):
    r = galaxyview(*args, "--backend", "cpu", "--n", "500")
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


def _env(tmp_path, **changes):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))  # settings kept there
    env.update(changes)
    return {k: v for k, v in env.items() if v is not None}


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.slow
def test_opens_playing_and_a_signal_closes_it_cleanly(tmp_path, sig, code):
    p = subprocess.Popen([sys.executable, "-m", "galaxyview", "plummer", "--backend", "cpu",
                          "--n", "800"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=_env(tmp_path))
    try:
        first = p.stdout.readline()  # printed once the window is up
        assert "plummer: 800 particles, CPU engine (asked for)" in first and "playing" in first
        time.sleep(3)
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == code, err
    assert signal.Signals(sig).name in err and "Traceback" not in err
    steps = int(re.search(r"closed after (\d+) steps", out).group(1))
    assert steps > 0  # it played without being asked


@pytest.mark.slow
def test_auto_backend_says_which_engine_and_why(tmp_path):
    from galaxyview.engines import resolve_backend

    _, why = resolve_backend("auto")
    out = tmp_path / "shot.png"
    r = galaxyview("plummer", "--n", "500", "--screenshot", str(out), "--frames", "1",
                   env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert why in r.stdout  # "CPU engine (pycuda is not installed ...)" or the GPU's name


@pytest.mark.slow
def test_screenshot_refuses_to_overwrite_without_overwrite(tmp_path):
    out = tmp_path / "shot.png"
    out.write_bytes(b"precious")
    args = ("plummer", "--backend", "cpu", "--n", "500", "--screenshot", str(out), "--frames",
            "1")
    r = galaxyview(*args, env=_env(tmp_path))
    assert r.returncode == 2 and "already exists" in r.stderr and "--overwrite" in r.stderr
    assert out.read_bytes() == b"precious"
    r = galaxyview(*args, "--overwrite", env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert iio.imread(out).ndim == 3


@pytest.mark.parametrize("changes, words", [
    ({"QT_QPA_PLATFORM": "offscreen"}, ["offscreen", "no OpenGL", "xvfb-run"]),
    ({"QT_QPA_PLATFORM": "minimal"}, ["minimal", "no OpenGL"]),
    ({"QT_QPA_PLATFORM": "linuxfb"}, ["linuxfb", "xvfb-run"]),  # asked in a child process
    ({"QT_QPA_PLATFORM": "no-such-plugin"}, ["no such Qt platform plugin", "xcb"]),
    ({"QT_QPA_PLATFORM": None, "DISPLAY": ":93"}, ["no X server", "DISPLAY=:93", "xvfb-run"]),
    ({"QT_QPA_PLATFORM": "wayland", "WAYLAND_DISPLAY": "wayland-93", "XDG_RUNTIME_DIR": "tmp"},
     ["no Wayland compositor", "wayland-93", "xvfb-run"]),  # Qt aborted here
    ({"QT_QPA_PLATFORM": "wayland", "WAYLAND_DISPLAY": None, "XDG_RUNTIME_DIR": None},
     ["XDG_RUNTIME_DIR is not set", "xvfb-run"]),
])
@pytest.mark.slow
def test_unusable_platform_or_display_is_one_line_and_exit_2(tmp_path, changes, words):
    if changes.get("XDG_RUNTIME_DIR") == "tmp":
        changes = dict(changes, XDG_RUNTIME_DIR=str(tmp_path))
    t0 = time.perf_counter()
    r = galaxyview("plummer", "--backend", "cpu", "--n", "500", env=_env(tmp_path, **changes),
                   timeout=90)
    assert time.perf_counter() - t0 < 60  # no hang
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.startswith("galaxyview:")]
    assert len(lines) == 1 and all(w in lines[0] for w in words), r.stderr
    assert "Traceback" not in r.stderr
