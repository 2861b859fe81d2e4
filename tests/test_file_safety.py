"""Writing the user's files safely: names made from data stay one file name in the folder
asked for, temporary files are our own (unique, hidden) and a killed run's are cleaned up,
Ctrl-D at the overwrite prompt is a no, and a read-only folder is one clear message."""
import builtins
import errno
import io
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import galaxyview as gv
from galaxyview.cli import run as cli_run
from galaxyview.cli.main import main
from galaxyview.errors import SnapshotError
from galaxyview.files import open_temp, remove_stale_temps, safe_name
from galaxyview.render.camera_path import CameraPath, Keyframe


@pytest.mark.parametrize("text, name", [
    ("NGC 4038/39", "NGC_4038_39"), ("../x", "x"), ("..", "galaxyview"), ("", "galaxyview"),
    ("M31 & M33 (merger)", "M31_M33_merger"), (".hidden", "hidden"), ("a/../../b", "a_._._b"),
    ("mw-andromeda", "mw-andromeda"), ("x" * 300, "x" * 80)])
def test_safe_name_is_one_plain_file_name(text, name):
    assert safe_name(text) == name


@pytest.mark.parametrize("scene", ["NGC 4038/39", "../x"])
def test_the_rescue_file_of_any_scene_name_lands_in_the_working_folder(tmp_path, monkeypatch,
                                                                       scene):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with gv.open("plummer", backend="cpu", n=64) as sim:
        sim.step(2)
        sim.name = scene
        said = cli_run._rescue(sim)
    written = list(work.iterdir())
    assert len(written) == 1 and str(written[0]) in said, said
    assert written[0].name.startswith(safe_name(scene) + "-rescue-")
    assert list(tmp_path.iterdir()) == [work]  # nothing outside the folder
    assert gv.load(written[0]).time > 0


class EndOfInput(io.StringIO):
    """A terminal whose user pressed Ctrl-D."""

    def isatty(self):
        return True


def test_ctrl_d_at_the_overwrite_prompt_is_a_no(tmp_path, monkeypatch, capsys):
    out = tmp_path / "end.h5"
    out.write_bytes(b"the user's file")
    monkeypatch.setattr(sys, "stdin", EndOfInput(""))
    code = main(["run", "plummer", "--n", "64", "--steps", "1", "--backend", "cpu", "--out",
                 str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert "end of input" in err and "already exists" in err and "Traceback" not in err
    assert out.read_bytes() == b"the user's file"


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder on a read-only file system: creating or removing a file there is EROFS."""
    folder = tmp_path / "ro"
    folder.mkdir()

    def inside(path):
        return isinstance(path, (str, bytes, os.PathLike)) and \
            Path(os.fsdecode(path)).parent == folder

    def refuse(original):
        def call(path, *args, **kwargs):
            if inside(path):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
            return original(path, *args, **kwargs)
        return call

    for module, name in ((os, "open"), (os, "unlink"), (os, "remove"), (builtins, "open"),
                         (io, "open")):
        monkeypatch.setattr(module, name, refuse(getattr(module, name)))
    return folder


@pytest.mark.parametrize("name", ["state.h5", "state.tipsy"])
def test_saving_into_a_read_only_folder_is_one_clear_error(read_only, name):
    with gv.open("plummer", backend="cpu", n=64) as sim:
        with pytest.raises(SnapshotError) as caught:
            sim.save(read_only / name)
    said = str(caught.value)
    assert str(read_only / name) in said and "Read-only file system" in said
    assert "folder" in said


@pytest.fixture
def read_only_mount(tmp_path):
    """A real read-only file system (a tmpfs mounted ro; needs root, else skipped: the
    `read_only` fixture above stands in for it)."""
    folder = tmp_path / "ro-mount"
    folder.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_the_apis_save_on_a_read_only_file_system_says_so(read_only_mount):
    with gv.open("plummer", backend="cpu", n=64) as sim:
        for name in ("state.h5", "state.tipsy"):
            with pytest.raises(SnapshotError, match="Read-only file system"):
                sim.save(read_only_mount / name)


def test_saving_a_camera_path_keeps_the_users_own_tmp_file(tmp_path):
    path = tmp_path / "orbit.toml"
    mine = tmp_path / "orbit.toml.tmp"
    mine.write_text("the user's notes")
    CameraPath([Keyframe(0.0, (0, 0, 5), (0, 0, 0), 45.0)]).save(path)
    assert mine.read_text() == "the user's notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orbit.toml", "orbit.toml.tmp"]
    assert len(CameraPath.load(path)) == 1


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporary_files_of_a_killed_run_are_removed_and_no_others(tmp_path, caplog):
    target = tmp_path / "movie.mp4"
    old = time.time() - 3600
    stale = tmp_path / f".movie.mp4.galaxyview-{_dead_pid()}-0123abcd.part"
    running = tmp_path / f".movie.mp4.galaxyview-{os.getppid()}-0123abcd.part"  # alive
    others = [tmp_path / ".movie.mp4.0123abcd.part", tmp_path / "movie.mp4.part",
              tmp_path / f".other.mp4.galaxyview-{_dead_pid()}-0123abcd.part"]
    for path in (stale, running, *others):
        path.write_bytes(b"x")
        os.utime(path, (old, old))
    with caplog.at_level(logging.WARNING):
        temp, fd = open_temp(target, ".part")
    os.close(fd)
    assert not stale.exists() and running.exists() and all(p.exists() for p in others)
    assert temp.name.startswith(".movie.mp4.galaxyview-") and temp.suffix == ".part"
    assert any(str(stale) in r.getMessage() for r in caplog.records)
    fresh = tmp_path / f".movie.mp4.galaxyview-{_dead_pid()}-4567abcd.part"
    fresh.write_bytes(b"x")  # newer than this process: maybe a run still finishing; kept
    assert remove_stale_temps(target) == [] and fresh.exists()


def test_a_frame_writer_cleans_the_stale_frames_of_a_killed_run_once(tmp_path):
    """Numbered frames: the stale temporary files of any frame's name go at the first frame."""
    old = time.time() - 3600
    stale = [tmp_path / f".{i:05d}.png.galaxyview-{_dead_pid()}-0123abcd.part" for i in (3, 7)]
    mine = tmp_path / "notes.txt"
    for path in (*stale, mine):
        path.write_bytes(b"x")
        os.utime(path, (old, old))
    removed = remove_stale_temps(tmp_path / "00000.png", any_name=True)
    assert sorted(removed) == sorted(stale) and mine.exists()
    assert not any(p.exists() for p in stale)


KILLED_RECORDING = textwrap.dedent("""
    import sys, time
    import numpy as np
    from galaxyview.movie.encoder import MovieWriter
    writer = MovieWriter(sys.argv[1], fps=10, size=(64, 64))
    for _ in range(5):
        writer.add_frame(np.zeros((64, 64, 3), np.uint8))
    print(writer.temp_path, flush=True)
    time.sleep(600)
""")


@pytest.mark.slow
def test_a_recording_killed_with_sigkill_leaves_a_part_file_the_next_one_removes(tmp_path):
    movie = tmp_path / "m.mp4"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RECORDING, str(movie)],
                            stdout=subprocess.PIPE, text=True)
    part = Path(proc.stdout.readline().strip())
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert part.parent == tmp_path and part.name.startswith(".m.mp4.galaxyview-")
    deadline = time.monotonic() + 60  # ffmpeg finishes its file once its input ends
    while time.monotonic() < deadline and time.time() - part.stat().st_mtime < 1.5:
        time.sleep(0.2)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        import numpy as np
        from galaxyview.movie.encoder import MovieWriter
        with MovieWriter(sys.argv[1], fps=10, size=(64, 64)) as w:
            w.add_frame(np.zeros((64, 64, 3), np.uint8))
    """), str(movie)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not part.exists() and "removed" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mp4"]


@pytest.mark.gui
def test_dialogs_suggest_the_scenes_name():
    from galaxyview.app.recording import suggested_name

    assert suggested_name("mw-andromeda", ".mp4") == "mw-andromeda.mp4"
    assert suggested_name("/data/NGC 4038+39.toml", ".png") == "NGC_4038+39.png"
    assert suggested_name(None, "-camera.toml") == "galaxyview-camera.toml"


@pytest.mark.gui
def test_a_screenshot_over_a_file_is_whole_or_not_written(tmp_path, monkeypatch):
    import imageio.v3 as iio

    from galaxyview.app.recording import save_png

    path = tmp_path / "shot.png"
    path.write_bytes(b"the user's picture")

    def fail(f, *args, **kwargs):
        f.write(b"half a png")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(iio, "imwrite", fail)
    with pytest.raises(Exception, match="No space"):
        save_png(path, np.zeros((8, 8, 3), np.uint8))
    assert path.read_bytes() == b"the user's picture"
    assert [p.name for p in tmp_path.iterdir()] == ["shot.png"]
