"""How many worker threads the CPU engines use: set_threads(n) (the --threads option), else
GALAXYVIEW_THREADS, else the CPUs this process may run on. The numpy engine uses at most
MAX_WORKERS of them (numpy releases the GIL inside its loops); the compiled engine all."""
from __future__ import annotations

import os

from galaxyview.errors import EngineError

MAX_WORKERS = 8
ENV = "GALAXYVIEW_THREADS"


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _from_env() -> int | None:
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise EngineError(f"{ENV}={text!r}: give a whole number of threads >= 1, or unset it")
    return n


_chosen: int | None = None


def set_threads(n: int | None) -> None:
    """Threads of the CPU engines from now on (None: GALAXYVIEW_THREADS or all CPUs)."""
    global _chosen
    if n is not None and (int(n) != n or n < 1):
        raise EngineError(f"threads: give a whole number >= 1, got {n!r}")
    _chosen = None if n is None else int(n)


def count() -> int:
    """Threads of the compiled CPU engine; EngineError for a bad GALAXYVIEW_THREADS."""
    return _chosen or _from_env() or available_cpus()


def workers() -> int:
    """Worker threads of the numpy engine (tree walk and direct summation)."""
    return min(count(), MAX_WORKERS)
