"""Compile kernels/nbody_*.cu for the current device (pycuda SourceModule, cached on disk) and
launch its kernels with every launch checked."""
from __future__ import annotations

import os

from galaxyview.engines.gpu.probe import find_nvcc
from galaxyview.errors import EngineError
from galaxyview.resources import kernels_dir

# concatenated in this order into one translation unit (the common header first)
SOURCES = ("nbody_common.cuh", "nbody_keys.cu", "nbody_tree.cu", "nbody_walk.cu",
           "nbody_direct.cu", "nbody_integrate.cu")

# kernel name -> pycuda argument format (P pointer, i int32, I uint32, f float32, d float64)
SIGNATURES = {
    "bbox_partial": "PiPP",
    "bbox_final": "PiP",
    "make_keys": "PiPPP",
    "radix_hist": "PiiPi",
    "scan_excl": "PPiPPI",
    "radix_scatter": "PPPPiiPPi",
    "reorder": "PiPPPPPP",
    "tree_init": "iPPPPP",
    "build_level": "iiiPPPPPPPPPPPI",
    "make_groups": "iiiiPPPPPPPI",
    "multipoles_level": "idPPPPPPPPPPPPPP",
    "walk": "PPPPPPPPPPffi",
    "direct_forces": "PiffP",
    "direct_sample_f64": "PiPddP",
    "kick_drift": "PPPiff",
    "kick": "PPifP",
    "energy_sums": "PPPiP",
    "masked_com": "PPPiP",
    "cell_boxes": "iiPPPPP",
}

def source_text() -> str:
    """The kernels as one CUDA C++ source (read from kernels/)."""
    folder = kernels_dir()
    parts = []
    for name in SOURCES:
        path = folder / name
        if not path.is_file():
            raise EngineError(f"GPU kernel source {path} is missing; reinstall galaxyview")
        parts.append(f"// ---- {name}\n" + path.read_text())
    return "\n".join(parts)


class Kernels:
    """The compiled module: attribute access gives a checked launcher per kernel."""

    def __init__(self, device):
        import pycuda.driver as cuda
        from pycuda.compiler import SourceModule

        self._cuda = cuda
        major, minor = device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        nvcc = find_nvcc() or "nvcc"
        extra = os.environ.get("GALAXYVIEW_NVCC_FLAGS", "").split()  # tuning, e.g. -DWALK_MIN_BLOCKS=4
        try:
            self.module = SourceModule(source_text(), nvcc=nvcc, arch=self.arch, no_extern_c=True,
                                       options=["-O3", "-std=c++17", *extra])
        except cuda.CompileError as exc:
            log = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()
            first = next((ln for ln in log if "error" in ln), log[0] if log else str(exc))
            raise EngineError(f"the GPU kernels failed to compile for {self.arch}: {first.strip()} "
                              "(use --backend cpu, or check the CUDA toolkit)") from None
        except OSError as exc:
            raise EngineError(f"could not run the CUDA compiler {nvcc!r} ({exc}); "
                              "install the CUDA toolkit or use --backend cpu") from None
        self.functions = {}
        for name, sig in SIGNATURES.items():
            fn = self.module.get_function(name)
            fn.prepare(sig)
            self.functions[name] = fn
        self.sync_each = os.environ.get("GALAXYVIEW_GPU_SYNC", "") not in ("", "0")

    def launch(self, name, grid, block, *args, stream=None):
        """Launch kernel `name`; a failure names the kernel (GALAXYVIEW_GPU_SYNC=1 also waits
        for each kernel, so a fault is caught at the kernel that caused it)."""
        cuda = self._cuda
        try:
            self.functions[name].prepared_async_call(grid, block, stream, *args)
            if self.sync_each:
                cuda.Context.synchronize()
        except cuda.Error as exc:
            raise EngineError(f"GPU kernel {name} failed: {exc}; the GPU context may be "
                              "unusable: restart galaxyview or use --backend cpu") from None

    def regs(self, name) -> int:
        return self.functions[name].get_attribute(self._cuda.function_attribute.NUM_REGS)

    def max_threads(self, name) -> int:
        """The block size a kernel was compiled for (its __launch_bounds__)."""
        return self.functions[name].get_attribute(
            self._cuda.function_attribute.MAX_THREADS_PER_BLOCK)

    def static_smem(self, name) -> int:
        return self.functions[name].get_attribute(
            self._cuda.function_attribute.SHARED_SIZE_BYTES)
