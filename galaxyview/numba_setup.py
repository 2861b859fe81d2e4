"""numba, configured in one place: every compiled kernel of the package is decorated through
`kernel` here, so each entry point (command line, window, API, MPI ranks, `python -c`) compiles
them for the same CPU features and numba's disk cache holds one copy that the next one loads.

numba fixes its CPU target (name and features) when the target is first set up: at the first
decoration with cache=True or the first compile. Importing this module applies galaxyview's
setting before that: on CPUs with AVX-512, LLVM's tuning keeps loops at 256-bit vectors; the
force loops run about 1.2x faster with 512-bit ones, so they are allowed (`wide_vectors`)
unless NUMBA_CPU_NAME or NUMBA_CPU_FEATURES says otherwise. On other CPUs (AVX2, arm64) the
setting is left alone. Where the process set numba's target up before importing galaxyview
(its own cached kernels first), that target stays and the setting is not applied.

Importing this module imports numba (an ImportError where it is missing). The cache lies in
__pycache__ beside the sources when that is writable, else in the user's cache folder
(~/.cache/numba or the platform's equivalent); NUMBA_CACHE_DIR overrides both.
"""
from __future__ import annotations

import logging

import numba
from llvmlite import binding as llvm

log = logging.getLogger(__name__)

# fastmath for the force loops: reassociation (vectorised sums) and contraction (FMA), no
# assumption that values are finite, so a NaN from a bad step still shows as NaN
FAST = set({"reassoc", "contract", "arcp", "nsz", "afn"})
prange = numba.prange


def target_ready() -> bool:
    """Whether numba's CPU target (and so its CPU features) is already fixed in this process."""
    from numba.core.registry import cpu_target

    return "_toplevel_target_context" in vars(cpu_target)


def wide_vectors(features=None) -> bool:
    """Let LLVM use 512-bit vectors where the CPU has AVX-512 (numba's CPU features: the
    host's, `features` for a test, less the preference for 256 bits); True when set."""
    if numba.config.CPU_FEATURES is not None or numba.config.CPU_NAME:
        return False
    if features is None:
        try:
            features = llvm.get_host_cpu_features()
        except RuntimeError:  # LLVM cannot list them on some hosts: numba then uses none
            return False
    if not features.get("avx512f"):  # AVX2, arm64's NEON (no such key): numba's own choice
        return False
    if target_ready():  # too late for this process: keep config and target in agreement
        log.debug("numba's CPU target was set up before galaxyview: 256-bit vectors")
        return False
    numba.config.CPU_FEATURES = features.flatten() + ",-prefer-256-bit"
    return True


wide_vectors()


def kernel(**options):
    """numba.njit with the disk cache on and numpy's error model (no division checks)."""
    return numba.njit(cache=True, nogil=True, error_model="numpy", **options)


def target_features() -> str:
    """The CPU features numba compiles for in this process (its codegen's, once set up)."""
    from numba.core.registry import cpu_target

    return cpu_target.target_context.codegen().magic_tuple()[2]


def cache_misses(*modules) -> int:
    """How many kernels of `modules` numba compiled in this process because its disk cache did
    not hold them (its dispatchers' statistics)."""
    from numba.core.registry import CPUDispatcher

    return sum(sum(v.stats.cache_misses.values()) for m in modules
               for v in vars(m).values() if isinstance(v, CPUDispatcher))
