"""Several processes for one simulation: `--procs K` / `--gpus K` start `mpirun -n K` on this
host with the same command line; under mpirun, rank 0 runs the command and the other ranks
serve its engine (engines/parallel)."""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time

from galaxyview import interrupt

from galaxyview.cli.output import say
from galaxyview.errors import GalaxyviewError
from galaxyview.progress import TERMINAL_ENV

REPORTED = (0, 1, 2, 3, 129, 130, 143)  # exit codes whose reason rank 0 or a time-out printed
GRACE_S = 8  # after a stop, seconds the job has to end before it is killed
GRACE_ENV = "GALAXYVIEW_STOP_GRACE"
KILLED = -signal.SIGKILL


def wanted(args) -> int:
    """Processes asked for: --gpus K or --procs K (1 when neither)."""
    gpus, procs = getattr(args, "gpus", None), getattr(args, "procs", None)
    if gpus and procs and gpus != procs:
        raise GalaxyviewError(f"--gpus {gpus} and --procs {procs} disagree; give one of them")
    if gpus:
        if args.backend not in ("auto", "gpu"):
            raise GalaxyviewError(f"--gpus runs the GPU engine; --backend {args.backend} "
                                  "asks for another (use --procs K for the CPU engines)")
        args.backend = "gpu"
    return gpus or procs or 1


MAX_PER_CPU = 4  # --procs K: at most this many processes a CPU


def flag(args, k: int) -> str:
    """The options that asked for k processes, as the user gave them."""
    if getattr(args, "gpus", None):
        return f"--gpus {k}"
    return f"--procs {k}" + (" --backend gpu" if args.backend == "gpu" else "")


def check_launched(k: int) -> None:
    """Under mpirun: --procs/--gpus, where given, must be the job's size."""
    from galaxyview.engines.parallel import world_size_from_env

    size = world_size_from_env()
    if k > 1 and k != size:
        raise GalaxyviewError(f"--procs/--gpus {k} under an mpirun of {size} processes: give "
                              f"the same count, or leave --procs and --gpus out under mpirun")


def spawn(argv: list[str], k: int, gpus: bool, n: int | None = None,
          asked: str | None = None) -> int:
    """Run this command line again under mpirun -n k (n: the particles asked for, checked
    first where known; asked: the options that asked for it); its exit code."""
    from galaxyview.engines import gpu_unavailable_reason
    from galaxyview.engines.parallel import launch

    flag = asked or (f"--gpus {k}" if gpus else f"--procs {k}")
    few = launch.too_few(n, k) if n is not None else None
    if few:
        raise GalaxyviewError(f"{flag}: {few}")
    cpus = os.cpu_count() or 1
    if not gpus and k > MAX_PER_CPU * cpus:
        raise GalaxyviewError(f"{flag}: {k} processes on {cpus} CPUs would only wait for each "
                              f"other (each also takes memory to start); use at most "
                              f"{MAX_PER_CPU * cpus}")
    reason = launch.unavailable_reason()
    if reason:
        raise GalaxyviewError(f"{flag}: {reason}; or run on one process")
    if gpus:
        reason = gpu_unavailable_reason(0)
        if reason:
            raise GalaxyviewError(f"{flag}: {reason}; --procs {k} --backend cpu runs the CPU "
                                  f"engine over {k} processes")
        reason = gpu_unavailable_reason(launch.rank_gpu(k - 1))
        if reason:
            raise GalaxyviewError(f"{flag}: {reason}; ask for fewer GPUs")
    if not gpus and k > cpus:
        say(f"galaxyview: note: {k} processes share {cpus} CPUs; fewer processes will be "
            "faster")
    env = dict(os.environ)
    if sys.stderr.isatty():  # rank 0's stderr is mpirun's pipe: it draws its bars anyway
        env[TERMINAL_ENV] = "1"
    if "GALAXYVIEW_THREADS" not in env and "--threads" not in argv:
        env["GALAXYVIEW_THREADS"] = str(max(1, (os.cpu_count() or 1) // k))
    cmd = launch.mpirun_command(k, [sys.executable, "-m", "galaxyview", *argv])
    aware = {True: "CUDA-aware", False: "not CUDA-aware: host staging", None: "CUDA-awareness "
             "unknown"}[launch.cuda_aware()] if gpus else ""
    say(f"galaxyview: {k} processes{f' (MPI {aware})' if aware else ''}: {' '.join(cmd)}")
    grace = launch.env_count(GRACE_ENV, GRACE_S)
    fd, note = tempfile.mkstemp(prefix="galaxyview-stop-", suffix=".txt")
    os.close(fd)
    env[interrupt.NOTE_ENV] = note
    try:
        # mpirun in a session of its own: a stop reaches only this process, which passes it
        # on (see _supervise); mpirun itself would kill the job on SIGINT or SIGTERM
        process = subprocess.Popen(cmd, env=env, start_new_session=True,
                                   preexec_fn=_end_with_the_launcher)
        code, stop = _supervise(process, note, grace)
    finally:
        os.unlink(note)
    if stop and code not in REPORTED:  # killed, or stopped before rank 0 took signals
        how = (f"it had not stopped {grace} s after it, so it was killed" if code == KILLED
               else f"its processes were still starting (exit code {code})")
        say(f"galaxyview: stopped by {stop}: {how}; the job kept nothing but what it had "
            f"written before (an --archive's snapshots)")
        return 130
    if code not in REPORTED:
        signal_name = f", {signal.Signals(code - 128).name}" if 128 < code < 160 else ""
        say(f"galaxyview: error: a process of the {k}-process job ended abnormally (exit code "
            f"{code}{signal_name}); mpirun stopped the others")
    return code


def _end_with_the_launcher() -> None:
    """In mpirun's process before it starts (Linux): SIGTERM to it when this launcher dies,
    however it dies (SIGKILL, the OOM killer), so that mpirun ends its ranks rather than
    running on without anyone to stop it (PR_SET_PDEATHSIG; elsewhere nothing)."""
    try:
        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _supervise(process, note: str, grace: int) -> tuple[int, str | None]:
    """Wait for mpirun; a stop (Ctrl-C, SIGTERM, SIGHUP: KeyboardInterrupt here) is written
    to `note` and passed on as SIGUSR1 (mpirun forwards it to every rank; rank 0 stops at the
    end of its command or step, keeps its state and lets the others go). A job still running
    `grace` s after the first stop is killed (SIGKILL to every process of mpirun's session:
    the ranks are in process groups of their own). (exit code or KILLED, the stop's name)."""
    deadline, stop, passing = None, None, False
    while True:
        try:
            if passing:  # (here, so that another stop meanwhile only comes round again)
                stop = interrupt.what_stopped()
                with open(note, "w") as out:
                    out.write(signal.Signals(interrupt.stopped_by() or signal.SIGINT).name)
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGUSR1)
                passing = False
                deadline = deadline or time.monotonic() + grace
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            return process.wait(left), stop
        except KeyboardInterrupt:
            passing = True
        except subprocess.TimeoutExpired:
            for sig in interrupt.STOP_SIGNALS:  # nothing more to pass on
                signal.signal(sig, signal.SIG_IGN)
            kill_session(process.pid)
            process.wait()
            return KILLED, stop


def kill_session(sid: int) -> None:
    """SIGKILL to every process of session `sid` (mpirun, its ranks and their workers)."""
    pids = {sid}
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.getsid(int(entry)) == sid:
                        pids.add(int(entry))
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def as_rank(command, gpu: bool = False) -> int:
    """Under mpirun: rank 0 runs command() and then lets the others go; they serve it. First
    every process's settings are agreed on (a bad one on any process ends the job at once,
    with its message); stops are held on rank 0 (interrupt.py), ignored on the others (the
    launcher's SIGUSR1, a terminal's Ctrl-C), which end when rank 0 lets them go."""
    from galaxyview.engines.parallel.engine import agree_set_up, serve, stop_serving
    from galaxyview.engines.parallel.mpi import TIMEOUT_S, Comm, rank_from_env

    if rank_from_env() != 0:  # (mpirun's SIGTERM ends them)
        for sig, how in ((signal.SIGINT, signal.SIG_IGN), (signal.SIGUSR1, signal.SIG_IGN),
                         (signal.SIGTERM, signal.SIG_DFL), (signal.SIGHUP, signal.SIG_DFL)):
            signal.signal(sig, how)
    else:  # (main() holds already where the launcher started the job)
        interrupt.hold(signal.SIGUSR1)
    comm = Comm(TIMEOUT_S)  # (GALAXYVIEW_MPI_TIMEOUT once agreed on)
    bad = agree_set_up(comm, gpu)
    if bad:
        if comm.rank == 0:
            raise GalaxyviewError(bad)
        return 2
    if comm.rank != 0:  # rank 0 stops the run, then the ranks
        return serve(comm)
    try:
        return command()
    finally:
        stop_serving(comm)
