"""numba, configured once: compiled kernels are cached on disk, threads follow threads.count().

Importing this module imports numba (an ImportError where it is missing). numba keeps its
cache in __pycache__ beside the sources when that is writable, else in the user's cache folder
(~/.cache/numba or the platform's equivalent); NUMBA_CACHE_DIR overrides both.

On CPUs with AVX-512, LLVM's tuning keeps loops at 256-bit vectors; the force loops run about
1.2x faster with 512-bit ones, so they are allowed (wide_vectors) unless NUMBA_CPU_NAME or
NUMBA_CPU_FEATURES says otherwise. The setting is numba's, for the whole process, and takes
effect when numba compiles its first function; the disk cache keeps the two builds apart.
"""
from __future__ import annotations

import numba
from llvmlite import binding as llvm

from galaxyview.engines.cpu import threads

# fastmath for the force loops: reassociation (vectorised sums) and contraction (FMA), no
# assumption that values are finite, so a NaN from a bad step still shows as NaN
FAST = set({"reassoc", "contract", "arcp", "nsz", "afn"})


def wide_vectors() -> bool:
    """Let LLVM use 512-bit vectors where the CPU has AVX-512 (numba's CPU features: the
    host's less the preference for 256 bits); True when set."""
    if numba.config.CPU_FEATURES is not None or numba.config.CPU_NAME:
        return False
    features = llvm.get_host_cpu_features()
    if not features.get("avx512f"):
        return False
    numba.config.CPU_FEATURES = features.flatten() + ",-prefer-256-bit"
    return True


wide_vectors()


def kernel(**options):
    """numba.njit with the disk cache on and numpy's error model (no division checks)."""
    return numba.njit(cache=True, nogil=True, error_model="numpy", **options)


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
