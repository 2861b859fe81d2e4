"""Every constant the GPU engine's Python and CUDA share, defined once: the kernels get them as
nvcc -D flags (kernels/nbody_common.cuh refuses to compile without them)."""
from __future__ import annotations

from galaxyview.model import density
from galaxyview.model.params import TREE_MAX_LEVEL

MAX_LEVEL = TREE_MAX_LEVEL
DENSITY_N_MIN = density.N_MIN  # the density colouring's cells (model/density.py)
DENSITY_MAX_LEVEL = density.MAX_LEVEL

# status[] words (64-bit) the kernels report through
ST_PP = 0  # particle-particle interactions of the last walk
ST_PC = 1  # particle-cell interactions
ST_FLAGS = 2  # FLAG_* bits
ST_CELLS = 3  # cells built
ST_GROUPS = 4  # groups built
ST_WALK_NEXT = 5  # next group for the persistent walk
ST_LOCAL_PP = 6  # (a parallel rank) the local walk's ST_PP and ST_PC, copied aside before
ST_LOCAL_PC = 7  # the LET walk adds its own
ST_TILE0 = 8  # tile counters of the look-back launches of one step (ST_TILE0 + slot)
STATUS_WORDS = 64

FLAG_CELLS = 1  # cell arrays too small
FLAG_GROUPS = 2  # group arrays too small
FLAG_STACK = 4  # a walk stack overflowed
FLAG_NONFINITE = 8  # a position is NaN or infinite

STACK_CAP = 8192  # cells per warp stack of the walk
SORT_THREADS = 256  # radix sort: threads a tile, keys a thread
SORT_ITEMS = 16
SORT_TILE = SORT_THREADS * SORT_ITEMS
RADIX = 256
SCAN_THREADS = 256  # single-pass scan: threads a tile, items a thread
SCAN_ITEMS = 8
SCAN_TILE = SCAN_THREADS * SCAN_ITEMS


def defines() -> dict[str, int]:
    """The constants above, for nvcc -D."""
    return {k: v for k, v in globals().items() if k.isupper() and isinstance(v, int)}
