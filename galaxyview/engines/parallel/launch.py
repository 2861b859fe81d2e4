"""Starting an MPI job on this host: the mpirun command line, and what is missing for one.

`galaxyview ... --procs K` (or `--gpus K`) re-runs itself under `mpirun -n K`; across hosts
one runs mpirun with a host file oneself (docs/parallel.md). Nothing here imports mpi4py.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess

from galaxyview.errors import EngineError

MIN_PER_PROCESS = 64  # particles a process holds at least


def too_few(n: int, k: int) -> str | None:
    """None when n particles can be shared by k processes; otherwise a sentence saying not."""
    if n >= MIN_PER_PROCESS * k:
        return None
    return (f"{n} particle{'s are' if n != 1 else ' is'} too few for {k} processes; use at least "
            f"{MIN_PER_PROCESS * k} particles, or fewer processes")


def mpirun_path() -> str | None:
    return shutil.which("mpirun") or shutil.which("mpiexec")


def unavailable_reason() -> str | None:
    """None when an MPI job can start here; otherwise what is missing and how to get it."""
    if mpirun_path() is None:
        return ("mpirun was not found on PATH; install Open MPI (Debian/Ubuntu: `apt install "
                "openmpi-bin libopenmpi-dev`)")
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed; `pip install mpi4py` (or 'galaxyview[mpi]')"
    return None


def env_choice(name: str, choices: tuple[str, ...]) -> str:
    """Environment variable `name`: one of `choices` (unset: the first)."""
    text = os.environ.get(name, choices[0])
    if text not in choices:
        raise EngineError(f"{name}={text!r}: give {' or '.join(choices)}")
    return text


def env_count(name: str, default: int) -> int:
    """Environment variable `name`: a whole number >= 1 (unset: `default`)."""
    text = os.environ.get(name, str(default))
    if not text.isdigit() or int(text) < 1:
        raise EngineError(f"{name}={text!r}: give a whole number >= 1")
    return int(text)


def ranks_per_gpu() -> int:
    """Processes sharing each GPU (GALAXYVIEW_RANKS_PER_GPU, default 1): more processes than
    GPUs run the K-process code on fewer GPUs (to try it; slower than a GPU a process)."""
    return env_count("GALAXYVIEW_RANKS_PER_GPU", 1)


def rank_gpu(local_rank: int) -> int:
    """The CUDA device of the process of this host's local rank."""
    return local_rank // ranks_per_gpu()


def mpirun_command(k: int, argv: list[str]) -> list[str]:
    """mpirun -n k on this host for the command argv: oversubscription allowed (more processes
    than cores), no binding to one core (each process runs its own threads), idle processes
    yielding their core, and Open MPI's refusal to run as root lifted where root runs it."""
    mpirun = mpirun_path()
    if mpirun is None:
        raise EngineError(unavailable_reason())
    cmd = [mpirun, "-n", str(k), "--quiet", "--oversubscribe", "--bind-to", "none",
           "--mca", "mpi_yield_when_idle", "1"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + list(argv)


def cuda_aware() -> bool | None:
    """Whether the Open MPI here was built with CUDA support (device pointers in MPI calls),
    from `ompi_info`; None when it cannot tell (no ompi_info, another MPI)."""
    tool = shutil.which("ompi_info")
    if tool is None:
        return None
    try:
        text = subprocess.run([tool, "--parsable", "--all"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in text.splitlines():
        if line.startswith("mca:mpi:base:param:mpi_built_with_cuda_support:value:"):
            return line.rsplit(":", 1)[1] == "true"
    return None
