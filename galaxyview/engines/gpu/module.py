"""The GPU engine's kernels: kernels/nbody_*.cu plus the kernel files of the chosen physics
modules, compiled as one module with the shared constants (engines/gpu/constants.py)."""
from __future__ import annotations

from galaxyview.cuda.compile import Module, read_kernel
from galaxyview.engines.gpu import constants

# concatenated in this order into one translation unit (the common header first)
SOURCES = ("nbody_common.cuh", "nbody_keys.cu", "nbody_tree.cu", "nbody_active.cu",
           "nbody_walk.cu",
           "nbody_direct.cu", "nbody_state.cu", "nbody_integrate.cu")


def source_text(extra=()) -> str:
    """The engine's kernels and then `extra` (module sources: (label, text) pairs) as one
    CUDA C++ source."""
    parts = [f"// ---- {name}\n" + read_kernel(name) for name in SOURCES]
    parts += [f"// ---- {label}\n{text}" for label, text in extra]
    return "\n".join(parts)


def compile_kernels(extra=()) -> Module:
    """The compiled engine module (current device), with the physics modules' kernels."""
    return Module(source_text(extra), constants.defines())
