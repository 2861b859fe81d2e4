"""How many worker threads the CPU engine uses (numpy releases the GIL inside its loops)."""
from __future__ import annotations

import os

MAX_WORKERS = 8


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


WORKERS = min(available_cpus(), MAX_WORKERS)  # default for tree_forces and direct_forces
