"""Bad files and values (issue 41): special files, damaged or lying headers and metadata, values
beyond float32. Each case ends in a GalaxyviewError naming the file (and the dataset or
attribute where known), or a good load."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from galaxyview.errors import GalaxyviewError, SceneError, SnapshotError
from galaxyview.model.scene import load_scene
from galaxyview.resources import scenes_dir
from galaxyview.snapshots import open_source, read


def finishes(call, timeout=60):
    """call() in a thread: (True, its exception or None) when it ends in `timeout` s."""
    box = {}

    def target():
        try:
            call()
            box["error"] = None
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    return "error" in box, box.get("error")


@pytest.mark.parametrize("loader", [open_source, read, load_scene])
def test_a_fifo_is_refused_not_waited_on(tmp_path, loader):
    fifo = tmp_path / "scene.toml"
    os.mkfifo(fifo)
    done, error = finishes(lambda: loader(fifo))
    if not done:  # unblock the reader left waiting, so the test run can end
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert done, "reading a FIFO hangs"
    assert isinstance(error, GalaxyviewError) and "FIFO" in str(error) and str(fifo) in str(error)


def _memory_limit(limit=3 << 30):
    """A child's address space bounded: a reader that reads /dev/zero to its end fails there
    with MemoryError instead of taking the machine's memory."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


LOAD = """import sys
from galaxyview.errors import GalaxyviewError
from galaxyview.model.scene import load_scene
from galaxyview.snapshots import open_source, read
try:
    {loader}(sys.argv[1])
except GalaxyviewError as exc:
    print(exc)
"""


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("loader", ["open_source", "read", "load_scene"])
def test_dev_zero_is_refused_without_reading_it(tmp_path, loader):
    r = subprocess.run([sys.executable, "-c", LOAD.format(loader=loader), "/dev/zero"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       preexec_fn=_memory_limit())
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("/dev/zero: a character device, not a regular file")


def test_the_command_line_refuses_dev_zero_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "galaxyview", "run", "/dev/zero", "--steps", "1"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       preexec_fn=_memory_limit())
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_a_scene_with_a_byte_order_mark_loads(tmp_path):
    text = (scenes_dir() / "plummer.toml").read_bytes()
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + text)
    assert load_scene(path).name == "plummer"


def test_deeply_nested_toml_is_a_scene_error(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000)
    with pytest.raises(SceneError, match="nested too deep"):
        load_scene(path)
