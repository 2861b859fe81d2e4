"""Starting an MPI job on this host: the mpirun command line, and what is missing for one.

`galaxyview ... --procs K` (or `--gpus K`) re-runs itself under `mpirun -n K`; across hosts
one runs mpirun with a host file oneself (docs/parallel.md). Nothing here imports mpi4py.
"""
from __future__ import annotations

import importlib.util
import os
import shutil

from galaxyview.errors import EngineError


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
