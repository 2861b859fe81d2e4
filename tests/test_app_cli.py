"""`galaxyview [SCENE] ... --screenshot FILE.png --frames K` and its errors, as a user runs it."""
import os
import subprocess
import sys

import imageio.v3 as iio
import pytest

pytestmark = pytest.mark.gui


def galaxyview(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "galaxyview", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_screenshot_runs_k_frames_and_saves_the_canvas(tmp_path):
    out = tmp_path / "shot.png"
    r = galaxyview("plummer", "--backend", "cpu", "--n", "1500", "--theta", "0.6",
                   "--screenshot", str(out), "--frames", "3")
    assert r.returncode == 0, r.stderr
    assert "3 frames" in r.stdout and "host upload" in r.stdout
    img = iio.imread(out)
    assert img.ndim == 3 and (img[..., :3].max(axis=-1) > 40).mean() > 0.002


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
def test_bad_input_is_one_clear_line(args, message):
    r = galaxyview(*args, "--backend", "cpu", "--n", "500")
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr
