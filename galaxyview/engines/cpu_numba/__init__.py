"""The compiled CPU engine: Bonsai's tree algorithm in numba, threads over groups.

build (keys, cells, groups, multipoles: the numpy engine's tree, the same cells and groups) ->
walk (per group: the MAC walk, lists gathered contiguously, SIMD loops over them); engine puts
them behind the numpy engine's shell (engines/cpu/engine.py), which keeps the state, the
physics modules and direct summation. Importing this package needs no numba; its modules do.
"""
from __future__ import annotations

MIN_NUMBA = (0, 59)


def unavailable_reason() -> str | None:
    """None when numba can be imported here; otherwise why not, and what to do."""
    try:
        import numba
    except Exception as exc:  # missing, or broken against this numpy
        return f"numba is not usable ({type(exc).__name__}: {exc}); install it: pip install numba"
    version = tuple(int(p) for p in numba.__version__.split(".")[:2] if p.isdigit())
    if version < MIN_NUMBA:
        return (f"numba {numba.__version__} is too old (need >= {'.'.join(map(str, MIN_NUMBA))});"
                " upgrade it: pip install -U numba")
    return None
