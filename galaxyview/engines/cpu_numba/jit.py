"""numba for the compiled CPU engine: its kernels are made through galaxyview/numba_setup.py
(one configuration for the whole package, applied before numba compiles anything); threads
follow threads.count()."""
from __future__ import annotations

import numba

from galaxyview.engines.cpu import threads


def thread_count() -> int:
    """threads.count(), within what numba started (NUMBA_NUM_THREADS)."""
    return max(1, min(threads.count(), numba.config.NUMBA_NUM_THREADS))


def use_threads() -> int:
    """Set the calling thread's numba thread count (numba's setting is per calling thread)
    to thread_count() and return it."""
    n = thread_count()
    numba.set_num_threads(n)
    return n


def parallel_chunks(size: int = 1):
    """Context: parallel loops hand out `size` iterations at a time (dynamic schedule)."""
    return numba.parallel_chunksize(size)
