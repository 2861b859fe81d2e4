"""One simulation over the processes of an MPI job (mpi4py), Bonsai's parallel method: key
domain decomposition with work-weighted splitters, particle exchange, local essential trees.

`mpi.py` the MPI wrapper (time-outs, never a hang); `decompose.py` keys, splitters, exchange;
`let.py` LET export and import; `rank.py` one rank's engine (the CPU engines' shell);
`engine.py` `ParallelEngine` (rank 0's Engine) and `serve()` (the other ranks). Importing this
package never imports mpi4py; `Comm()` does.
"""
from __future__ import annotations

from galaxyview.engines.parallel.mpi import local_rank_from_env, world_size_from_env


def launched() -> bool:
    """This process was started by mpirun in a job of more than one process."""
    return world_size_from_env() > 1


__all__ = ["launched", "local_rank_from_env", "world_size_from_env"]
