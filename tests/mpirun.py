"""Starting the MPI tests' processes from pytest: a script of tests/mpi under mpirun, or a
galaxyview command, with the checkout first on the PYTHONPATH (the caller's after it: the GPU
kit's pycuda) and a time-out."""
import json
import os
import subprocess
import sys
from pathlib import Path

from galaxyview.engines.parallel.launch import mpirun_command

HERE = Path(__file__).parent


def env(**extra) -> dict:
    path = os.pathsep.join([str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
    return dict(os.environ, PYTHONPATH=path, **extra)


def script(k: int, name: str, *args, timeout: float = 120, **extra_env):
    """mpirun -n k python tests/mpi/name args...: the CompletedProcess."""
    cmd = mpirun_command(k, [sys.executable, str(HERE / "mpi" / name), *map(str, args)])
    return subprocess.run(cmd, env=env(**extra_env), capture_output=True, text=True,
                          timeout=timeout)


def galaxyview(*args, timeout: float = 120, **extra_env):
    """python -m galaxyview args...: the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "galaxyview", *map(str, args)],
                          env=env(**extra_env), capture_output=True, text=True, timeout=timeout)


def last_json(stdout: str) -> dict:
    """The last JSON line a script printed (mpirun may add terminal codes after it)."""
    lines = [line for line in stdout.splitlines() if line.strip().startswith("{")]
    assert lines, f"no JSON line in the output: {stdout[-500:]!r}"
    return json.loads(lines[-1])
