"""How commands stop and what they keep: SIGTERM taken as Ctrl-C, --archive checked before
any work, a failed --out write rescued, several processes checked before mpirun starts, Ctrl-C
seen between frames and after numba's compiler, progress lines in a log."""
import os
import signal
import subprocess
import sys
import time

import pytest

from galaxyview import interrupt, progress
from galaxyview.cli import processes
from galaxyview.cli.main import main
from galaxyview.errors import GalaxyviewError
from galaxyview.snapshots import read

REF = ("--backend", "reference")


def run_cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_sigterm_stops_a_run_after_its_step_and_keeps_the_state(tmp_path):
    out = tmp_path / "end.h5"
    proc = subprocess.Popen([sys.executable, "-m", "galaxyview", "run", "plummer", "--n", "400",
                             "--steps", "1000000", *REF, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    deadline = time.monotonic() + 60
    line = ""
    while "particles" not in line and time.monotonic() < deadline:  # the run has started
        line = proc.stderr.readline()
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    stdout, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "interrupted (SIGTERM)" in err and str(out) in err and "Traceback" not in err
    assert "relative energy error" in stdout  # the report, as after Ctrl-C
    state = read(out)
    assert state.exact.steps > 0 and state.count == 1
    state.close()


@pytest.mark.parametrize("name, why", [("run.tipsy", "ending in .h5"),
                                       ("same.h5", "are the same file"),
                                       ("ro.h5", "is not writable")])
def test_run_archive_is_checked_before_any_work(capsys, tmp_path, monkeypatch, name, why):
    import galaxyview.simulation

    def no_work(*args, **kwargs):
        raise AssertionError("the simulation was opened before --archive was checked")

    monkeypatch.setattr(galaxyview.simulation, "open_simulation", no_work)
    if name == "ro.h5":  # a folder not writable (os.access: whoever runs it, root too)
        writable = os.access
        monkeypatch.setattr(os, "access", lambda path, mode: str(path) != str(tmp_path) and
                            writable(path, mode))
    out = ("--out", str(tmp_path / "same.h5")) if name == "same.h5" else ()
    code, _, err = run_cli(capsys, "run", "plummer", *REF, "--n", "200",
                           "--archive", str(tmp_path / name), *out)
    assert code == 2 and why in err and "--archive" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_folder_of_a_virtual_file_system_is_refused_before_work(capsys, tmp_path,
                                                                   monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(0, 0, 0))  # as /proc gives
    code, _, err = run_cli(capsys, "run", "plummer", *REF, "--n", "200", "--steps", "2",
                           "--out", str(tmp_path / "x.h5"))
    assert code == 2 and "stores no files (a virtual file system)" in err
    assert list(tmp_path.iterdir()) == []


def test_a_failed_out_write_keeps_the_report_and_rescues_the_state(capsys, tmp_path,
                                                                   monkeypatch):
    from galaxyview.simulation import Simulation

    def full(self, path, overwrite=False, format=None):
        raise GalaxyviewError(f"{path}: the disk is full")

    monkeypatch.setattr(Simulation, "save", full)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "run", "plummer", *REF, "--n", "200", "--steps", "3",
                             "--out", str(tmp_path / "end.h5"))
    assert code == 1
    assert "relative energy error" in out  # the run's report is not lost
    assert "all 3 steps ran, but writing --out failed" in err and "disk is full" in err
    rescued = list(tmp_path.glob("plummer-rescue-*.h5"))
    assert len(rescued) == 1 and str(rescued[0]) in err
    state = read(rescued[0])
    assert state.exact.steps == 3
    state.close()


def test_several_processes_are_checked_before_mpirun_starts(monkeypatch):
    from galaxyview.engines.parallel import launch

    def no_mpirun(*args, **kwargs):
        raise AssertionError("mpirun was started")

    monkeypatch.setattr(processes.subprocess, "Popen", no_mpirun)
    with pytest.raises(GalaxyviewError, match="--procs 64: 2000 particles are too few for 64 "
                                              "processes; use at least 4096 particles"):
        processes.spawn(["run", "plummer"], 64, False, 2000)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    with pytest.raises(GalaxyviewError, match="500 processes on 2 CPUs.*at most 8"):
        processes.spawn(["run", "plummer"], 500, False)
    monkeypatch.setattr(launch, "unavailable_reason", lambda: None)
    import galaxyview.engines as engines

    monkeypatch.setattr(engines, "gpu_unavailable_reason", lambda device=0: "no CUDA device")
    with pytest.raises(GalaxyviewError, match=r"--procs 2 --backend gpu: no CUDA device; "
                                              r"--procs 2 --backend cpu runs the CPU engine"):
        processes.spawn(["run"], 2, True, None, "--procs 2 --backend gpu")


def test_procs_under_mpirun_must_be_the_jobs_size(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    processes.check_launched(1)
    processes.check_launched(2)
    with pytest.raises(GalaxyviewError, match="--procs/--gpus 3 under an mpirun of 2"):
        processes.check_launched(3)


def test_sigterm_and_sighup_are_taken_as_ctrl_c_but_a_nohup_stays():
    """Also where SIGINT is ignored (a script's background job): SIGTERM still stops."""
    script = """
import os, signal, time
from galaxyview import interrupt
signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup leaves it
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job of a script starts
interrupt.take_stop_signals()
assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
stop = interrupt.Interrupt()
with stop.deferred():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.5)
print(stop.requested, interrupt.what_stopped())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "SIGTERM"]


def test_a_swallowed_ctrl_c_is_raised_afterwards(monkeypatch):
    """Noticed: the handler in force (standing in for a KeyboardInterrupt that a native
    callback swallowed) returns; check() raises it."""
    previous = signal.getsignal(signal.SIGINT)
    swallowed = []
    signal.signal(signal.SIGINT, lambda signum, frame: swallowed.append(signum))
    try:
        noticed = interrupt.Noticed()
        with noticed.watch():
            noticed.check()  # nothing yet
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
        assert swallowed == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt):
            noticed.check()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_a_frame_ends_the_movie_after_it():
    """record_frames: Ctrl-C while a frame is made (here in the engine's step) finishes that
    frame and stops; a second would stop at once."""
    import numpy as np

    from galaxyview.movie.recorder import RecordOptions, record_frames

    class Engine:
        time = 0.0

        def step(self, n):
            self.time += n
            if self.time == 3:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.1)

    class Renderer:
        camera = None

        def draw(self):
            return np.zeros((4, 4, 3), np.uint8)

    class Writer:
        frames = 0

        def add_frame(self, rgb, copy=True):
            self.frames += 1

    writer = Writer()
    options = RecordOptions(frames=50, overlap=False)
    done, interrupted, failure, _ = record_frames(Engine(), Renderer(), writer, options)
    assert interrupted and failure is None
    assert done == writer.frames == 4  # frames 0..3: the one being made when Ctrl-C came


def test_progress_in_a_log_is_a_line_a_while(capsys, monkeypatch):
    monkeypatch.delenv(progress.TERMINAL_ENV, raising=False)
    bar = progress.bar(100, "plummer", "step")  # stderr is captured: no terminal
    assert isinstance(bar, progress.LogLines)
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    bar.set_postfix_str("t = 1.5")
    bar.update(25)
    err = capsys.readouterr().err
    assert err.startswith("plummer: 25/100 steps (25%), ") and "left; t = 1.5" in err
    monkeypatch.setenv(progress.TERMINAL_ENV, "1")  # rank 0 of a job started from a terminal
    assert not isinstance(progress.bar(10, "x"), progress.LogLines)


@pytest.mark.parametrize("argv, words", [
    (["run", "plummer", "--n", "1e18"], ["1e18 is too large"]),
    (["run", "plummer", "--dt", "1e39"], ["at most 3.4e+38"]),
    (["bench", "--warmup", "-1"], ["must be >= 0"]),
    (["bench", "--hermite", "--backend", "cpu"], ["bench --hermite times the GPU engine only"]),
    (["bench", "--hierarchical", "mac", "--backend", "reference"], ["--hierarchical mac"]),
])
def test_more_bad_values_get_one_line(capsys, argv, words):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    for word in words:
        assert word in err, err
    assert "Traceback" not in err


def test_a_run_that_loses_energy_says_so(capsys):
    code, _, err = run_cli(capsys, "run", "cold-collapse", *REF, "--n", "300", "--eps", "0.001",
                           "--dt", "0.05", "--steps", "40")
    assert code == 0
    assert "the run is not accurate" in err, err
    code, _, err = run_cli(capsys, "run", "plummer", *REF, "--n", "300", "--steps", "3")
    assert code == 0 and "not accurate" not in err


@pytest.mark.parametrize("key, value, words", [
    ("mass", "1e-300", ["model.mass", "is too small: galaxyview computes in float32"]),
    ("radius", "1e30", ["pos reaches", "scale the model down"]),
])
def test_a_scene_beyond_float32_is_refused_with_the_reason(capsys, tmp_path, key, value, words):
    from galaxyview.resources import scenes_dir

    text = (scenes_dir() / "plummer.toml").read_text()
    old = next(line for line in text.splitlines() if line.startswith(f"{key} = "))
    scene = tmp_path / "big.toml"
    scene.write_text(text.replace(old, f"{key} = {value}"))
    code, _, err = run_cli(capsys, "run", str(scene), *REF, "--n", "300", "--steps", "2")
    assert code == 2
    for word in words:
        assert word in err, err
    assert "same position" not in err and "Traceback" not in err


def test_a_full_archive_keeps_its_snapshots_and_rescues_the_last_state(capsys, tmp_path,
                                                                       monkeypatch):
    from galaxyview.errors import SnapshotError
    from galaxyview.snapshots import archive

    real = archive.ArchiveWriter.append

    def append(self, exact):  # the disk fills after two snapshots
        if self.count >= 2:
            raise SnapshotError(f"the disk is full; the archive keeps its {self.count} "
                                "snapshots")
        real(self, exact)

    monkeypatch.setattr(archive.ArchiveWriter, "append", append)
    monkeypatch.chdir(tmp_path)
    arc = tmp_path / "a.h5"
    code, _, err = run_cli(capsys, "run", "plummer", *REF, "--n", "200", "--steps", "6",
                           "--archive", str(arc), "--every", "1")
    assert code == 1
    assert f"{arc} keeps its 2 snapshots (to t = " in err, err
    rescued = list(tmp_path.glob("plummer-rescue-*.h5"))
    assert len(rescued) == 1 and str(rescued[0]) in err
    last = read(rescued[0])
    assert last.exact.steps == 2
    last.close()
    kept = read(arc)
    assert kept.count == 2 and kept.exact.steps == 1
    kept.close()


def test_a_ring_losing_energy_by_its_collisions_gets_no_note(capsys):
    code, _, err = run_cli(capsys, "run", "ring-equilibrium", "--backend", "cpu", "--n", "300",
                           "--steps", "30")
    assert code == 0, err
    assert "not accurate" not in err
