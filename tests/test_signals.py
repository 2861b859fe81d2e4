"""Stops by signal at random (seeded) moments of `run`, `record` and `run --procs 2`: SIGTERM
and SIGHUP to a background job of a script (SIGINT ignored there), Ctrl-C and a double
Ctrl-C as from a terminal. Each ends well within a bound that only catches a hang (the time
taken is recorded), exits 128 + the signal with a line naming it, and what it was writing is
whole: an archive reads and restarts bit for bit, a movie holds the frames it says."""
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import galaxyview as gv
from galaxyview.engines.parallel.launch import mpirun_command
from galaxyview.snapshots import read

import mpirun

pytestmark = [pytest.mark.slow]
BOUND_S = 60  # a stop must end the command within this (it takes seconds): catches a hang
CODES = {"TERM": 143, "HUP": 129, "INT": 130, "INT2": 130}
SAYS = {"TERM": "SIGTERM", "HUP": "SIGHUP", "INT": "Ctrl-C", "INT2": "Ctrl-C"}
REF = ("--backend", "reference")


def _moment(name: str, low: float, high: float) -> float:
    """A seeded random moment (s) for case `name`: the same on every run."""
    return float(np.random.default_rng([41, *map(ord, name)]).uniform(low, high))


def _start(argv, tmp_path, background: bool, **env):
    """The command as a background job of a script (SIGINT ignored) or from a terminal."""
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if background else None
    out, err = open(tmp_path / "stdout", "w"), open(tmp_path / "stderr", "w")
    proc = subprocess.Popen([sys.executable, "-m", "galaxyview", *map(str, argv)],
                            stdout=out, stderr=err, cwd=tmp_path, preexec_fn=ignore,
                            env=mpirun.env(GALAXYVIEW_THREADS="1", **env))
    out.close(), err.close()
    return proc


def _stop(proc, how: str, at: float, tmp_path, record_property):
    """Signal `proc` at `at` s after its start; (exit code, stderr, seconds it took to end)."""
    time.sleep(at)
    sig = {"TERM": signal.SIGTERM, "HUP": signal.SIGHUP}.get(how, signal.SIGINT)
    t0 = time.monotonic()
    proc.send_signal(sig)
    if how == "INT2":
        time.sleep(0.05)
        proc.send_signal(sig)
    try:
        code = proc.wait(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{how} at {at:.2f} s: still running {BOUND_S} s later: "
                             + (tmp_path / "stderr").read_text()[-2000:])
    took = time.monotonic() - t0
    record_property("stop_s", round(took, 3))
    print(f"{how} at {at:.2f} s: ended in {took:.2f} s, exit {code}")
    return code, (tmp_path / "stderr").read_text(), took


def test_a_stop_waits_for_a_shielded_write():
    """A stop (here two Ctrl-C) during a shielded block (an archive's snapshot) is acted on
    after it: deferred to the step's end, not raised in the middle of the write."""
    from galaxyview import interrupt

    stop = interrupt.Interrupt()
    with stop.deferred():
        with interrupt.shielded():
            for _ in range(2):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.1)
            assert not stop.requested  # (a KeyboardInterrupt here would fail the test)
        assert stop.requested


@pytest.fixture(scope="module")
def start_state(tmp_path_factory):
    path = tmp_path_factory.mktemp("start") / "start.h5"
    with gv.open("plummer", backend="reference", n=400, dt=0.01, eps=0.05) as sim:
        sim.save(path)
    return path


def _check_restart(start, archive, more: int = 2) -> None:
    """The archive's last snapshot is the uninterrupted run's state at its step, and a
    restart from it continues bit for bit."""
    store = read(archive)
    last, steps = store.count - 1, store.exact.steps
    store.close()
    with gv.open(start, backend="reference") as sim:
        sim.step(steps)
        there = sim.engine.exact_state()
        sim.step(more)
        straight = sim.engine.exact_state()
    with gv.open(archive, backend="reference", index=last) as sim:
        kept = sim.engine.exact_state()
        sim.step(more)
        again = sim.engine.exact_state()
    for name in ("pos", "vel"):
        assert np.array_equal(getattr(kept, name), getattr(there, name)), name
        assert np.array_equal(getattr(again, name), getattr(straight, name)), name


@pytest.mark.parametrize("how, background", [("TERM", True), ("HUP", True), ("INT", False),
                                             ("INT2", False)])
def test_a_stopped_run_keeps_a_whole_archive(tmp_path, start_state, record_property, how,
                                             background):
    archive = tmp_path / "run.h5"
    proc = _start(["run", start_state, *REF, "--steps", "20000", "--archive", archive,
                   "--every", "1"], tmp_path, background)
    code, err, took = _stop(proc, how, _moment(f"run-{how}", 0.3, 3.0), tmp_path,
                            record_property)
    assert code == CODES[how], err[-2000:]
    assert SAYS[how] in err and "Traceback" not in err, err[-2000:]
    if archive.exists():  # (a stop during the start-up: nothing written yet)
        assert str(archive) in err
        _check_restart(start_state, archive)


@pytest.mark.parametrize("how, background", [("TERM", True), ("INT", False), ("INT2", False)])
def test_a_stopped_recording_keeps_a_whole_movie(tmp_path, record_property, how, background):
    import imageio_ffmpeg

    movie = tmp_path / "m.mp4"
    proc = _start(["record", "cold-collapse", *REF, "--n", "1500", "-o", movie, "--frames",
                   "100000", "--size", "160x96", "--no-progress"], tmp_path, background)
    code, err, took = _stop(proc, how, _moment(f"record-{how}", 0.5, 4.0), tmp_path,
                            record_property)
    assert code == CODES[how], err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".part"]
    if movie.exists():
        frames = sum(1 for _ in imageio_ffmpeg.read_frames(str(movie))) - 1
        assert f"with the {frames} of 100000 frames" in err, err[-2000:]


@pytest.mark.mpi
@pytest.mark.parametrize("how, background", [("TERM", True), ("INT2", False)])
@pytest.mark.usefixtures("mpi4py")
def test_a_stopped_two_process_run_ends_with_its_state(tmp_path, record_property, how,
                                                       background):
    """A stop between or inside steps: rank 0 stops after the step, keeps the state in the
    archive, lets the other process go."""
    archive = tmp_path / "run.h5"
    proc = _start(["run", "plummer", "--n", "4000", *REF, "--procs", "2", "--steps", "20000",
                   "--archive", archive, "--every", "10"], tmp_path, background)
    code, err, took = _stop(proc, how, _moment(f"procs-{how}", 2.0, 6.0), tmp_path,
                            record_property)
    assert code == CODES[how], err[-3000:]
    assert SAYS[how] in err and "Traceback" not in err, err[-3000:]
    if archive.exists():
        store = read(archive)
        assert np.isfinite(store.exact.pos).all() and store.exact.steps >= store.count - 1
        store.close()


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi4py")
def test_a_stop_while_the_particles_are_made_ends_the_job(tmp_path, record_property):
    """SIGTERM while each process makes its share (a collective follows): the job ends with
    143 and a line, at rank 0's next command boundary or killed after the grace period."""
    proc = _start(["run", "plummer", "--n", "400000", *REF, "--procs", "2", "--steps", "3"],
                  tmp_path, True, GALAXYVIEW_STOP_GRACE="3")
    code, err, took = _stop(proc, "TERM", _moment("procs-making", 2.5, 4.0), tmp_path,
                            record_property)
    assert code == 143, err[-3000:]
    assert "stopped by SIGTERM" in err and "Traceback" not in err, err[-3000:]
    assert "no answer" not in err  # no collective left waiting


@pytest.fixture
def mpi4py():
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun (Open MPI) is not installed")
    pytest.importorskip("mpi4py")


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi4py")
@pytest.mark.parametrize("name, value, says", [
    ("GALAXYVIEW_THREADS", "abc", "process 1: GALAXYVIEW_THREADS='abc'"),
    ("GALAXYVIEW_MPI_TIMEOUT", "-1", "process 1: GALAXYVIEW_MPI_TIMEOUT='-1'"),
])
def test_a_bad_setting_on_one_process_ends_the_job_at_once(tmp_path, name, value, says):
    argv = [sys.executable, "-m", "galaxyview", "run", "plummer", "--n", "2000", *REF,
            "--steps", "2"]
    cmd = mpirun_command(1, argv) + [":", "-n", "1", "env", f"{name}={value}", *argv]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=mpirun.env(GALAXYVIEW_THREADS="1"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert says in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - t0 < BOUND_S


JOB = """
import os, signal, subprocess, sys, time
from galaxyview import interrupt
from galaxyview.cli import processes

interrupt.take_stop_signals()
# a job that ignores the stop passed on: a 'launcher' and a 'rank' in a process group of its
# own, in the job's session (as Open MPI starts its ranks)
busy = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGUSR1, "
        "signal.SIG_IGN); print(flush=True); time.sleep(300)"]
job = subprocess.Popen([sys.executable, "-c", "import os, signal, subprocess, sys, time; "
                        "signal.signal(signal.SIGUSR1, signal.SIG_IGN); "
                        f"r = subprocess.Popen({busy!r}, process_group=0); "
                        "print(r.pid, flush=True); time.sleep(300)"],
                       start_new_session=True, stdout=subprocess.PIPE, text=True)
rank = int(job.stdout.readline())
print(rank, flush=True)
note = sys.argv[1]
code, stop = processes._supervise(job, note, 1)
print(code, stop, open(note).read(), flush=True)
"""


def test_a_job_that_does_not_stop_is_killed_after_the_grace_period(tmp_path):
    """The launcher passes the stop on; a job still running after the grace period is
    killed, its ranks (process groups of their own in mpirun's session) with it."""
    if sys.version_info < (3, 11):
        pytest.skip("process_group= needs Python 3.11")
    note = tmp_path / "note"
    proc = subprocess.Popen([sys.executable, "-c", JOB, str(note)], stdout=subprocess.PIPE,
                            text=True, env=mpirun.env())
    rank = int(proc.stdout.readline())
    time.sleep(1.0)  # (into _supervise's wait: two statements on)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=BOUND_S)
    assert out.split() == [str(-signal.SIGKILL), "SIGTERM", "SIGTERM"]
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:  # (the rank's parent reaps it: gone, or a zombie)
        try:
            with open(f"/proc/{rank}/stat") as stat:
                if stat.read().split(") ")[1].startswith("Z"):
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the rank outlived the kill")


@pytest.mark.gui
@pytest.mark.parametrize("how", ["TERM", "HUP"])
def test_a_background_viewer_closes_on_a_stop(tmp_path, record_property, how):
    """The viewer's command line as a script's background job: a stop while it loads or
    plays closes it with 128 + the signal."""
    proc = _start(["plummer", *REF, "--n", "800"], tmp_path, True,
                  XDG_CONFIG_HOME=str(tmp_path / "config"))
    code, err, took = _stop(proc, how, _moment(f"view-{how}", 0.5, 5.0), tmp_path,
                            record_property)
    assert code == CODES[how], err[-2000:]
    assert SAYS[how] in err and "Traceback" not in err, err[-2000:]


def _session(sid: int) -> list[int]:
    """The live (not zombie) processes of session `sid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) != sid:
                    continue
                with open(f"/proc/{entry}/stat") as stat:
                    if not stat.read().split(") ")[1].startswith("Z"):
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi4py")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_launcher_takes_its_job_with_it(tmp_path):
    """SIGKILL to the --procs launcher (nothing it can catch): mpirun gets SIGTERM from the
    kernel and ends its ranks; none runs on without anyone to stop it."""
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun (Open MPI) is not installed")
    proc = subprocess.Popen([sys.executable, "-m", "galaxyview", "run", "plummer", *REF,
                             "--n", "4000", "--procs", "2", "--steps", "1000000"],
                            cwd=tmp_path, env=mpirun.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline, sid, job = time.monotonic() + BOUND_S, None, []
    while time.monotonic() < deadline and len(job) < 3:  # mpirun and its two ranks
        children = [int(p) for p in os.listdir("/proc") if p.isdigit() and
                    _parent(int(p)) == proc.pid]
        sid = children[0] if children else None  # mpirun: a session of its own
        job = _session(sid) if sid else []
        time.sleep(0.2)
    try:
        assert len(job) >= 3, "the job did not start"
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + BOUND_S
        while _session(sid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _session(sid), f"processes of the job outlived its launcher: {_session(sid)}"
    finally:  # (a failure leaves no job behind)
        from galaxyview.cli.processes import kill_session

        proc.kill()
        if sid:
            kill_session(sid)


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().split(") ")[1].split()[1])
    except OSError:
        return None

