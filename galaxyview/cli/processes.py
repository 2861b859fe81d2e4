"""Several processes for one simulation: `--procs K` / `--gpus K` start `mpirun -n K` on this
host with the same command line; under mpirun, rank 0 runs the command and the other ranks
serve its engine (engines/parallel)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from galaxyview.cli.output import say
from galaxyview.errors import GalaxyviewError
from galaxyview.progress import TERMINAL_ENV

REPORTED = (0, 1, 2, 3, 130)  # exit codes whose reason rank 0 or the time-out printed


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
    # mpirun in a session of its own: Ctrl-C reaches only this process, which passes it on as
    # SIGUSR1 (mpirun forwards that to every rank; rank 0 takes it for Ctrl-C, stops the run
    # after the step and keeps its state; mpirun itself would kill the job on SIGINT)
    process = subprocess.Popen(cmd, env=env, start_new_session=True)
    while True:
        try:
            code = process.wait()
            break
        except KeyboardInterrupt:
            process.send_signal(signal.SIGUSR1)
    if code not in REPORTED:
        signal_name = f", {signal.Signals(code - 128).name}" if 128 < code < 160 else ""
        say(f"galaxyview: error: a process of the {k}-process job ended abnormally (exit code "
            f"{code}{signal_name}); mpirun stopped the others")
    return code


def as_rank(command) -> int:
    """Under mpirun: rank 0 runs command() and then lets the others go; they serve it."""
    from galaxyview.engines.parallel.engine import serve, stop_serving
    from galaxyview.engines.parallel.mpi import Comm

    comm = Comm()
    if comm.rank != 0:  # rank 0 stops the run, then the ranks
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        return serve(comm)
    signal.signal(signal.SIGUSR1, lambda *_: os.kill(os.getpid(), signal.SIGINT))  # see spawn
    try:
        return command()
    finally:
        stop_serving(comm)
