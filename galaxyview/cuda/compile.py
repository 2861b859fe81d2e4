"""The one kernel compiler: CUDA C sources joined into one module for the current device
(pycuda SourceModule, cached on disk), constants passed as -D, and every kernel prepared with
the argument format read off its own signature (so launch signatures are declared once, in C).
"""
from __future__ import annotations

import os
import re

from galaxyview.cuda.probe import find_nvcc
from galaxyview.errors import EngineError
from galaxyview.resources import kernels_dir

_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?'
                     r'(\w+)\s*\(([^)]*)\)', re.S)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_SCALARS = {  # C scalar type -> pycuda/struct format character
    "int": "i", "unsigned": "I", "unsigned int": "I", "float": "f", "double": "d",
    "long long": "q", "unsigned long long": "Q", "int64_t": "q", "uint64_t": "Q",
    "int32_t": "i", "uint32_t": "I",
}


def kernel_formats(source: str) -> dict[str, str]:
    """{kernel name: argument format} of every `extern "C" __global__` kernel in `source`:
    P for a pointer, i/I/f/d/q/Q for scalars."""
    out = {}
    for name, params in _KERNEL.findall(_COMMENT.sub("", source)):
        fmt = []
        for param in filter(None, (p.strip() for p in params.split(","))):
            if "*" in param:
                fmt.append("P")
                continue
            words = [w for w in param.split()[:-1] if w not in ("const", "__restrict__")]
            kind = _SCALARS.get(" ".join(words))
            if kind is None:
                raise EngineError(f"kernel {name}: cannot pass argument {param!r} from Python")
            fmt.append(kind)
        out[name] = "".join(fmt)
    return out


def read_kernel(name: str) -> str:
    """The text of kernels/`name`."""
    path = kernels_dir() / name
    if not path.is_file():
        raise EngineError(f"GPU kernel source {path} is missing; reinstall galaxyview")
    return path.read_text()


def defines_flags(defines: dict) -> list[str]:
    return [f"-D{k}={int(v)}" for k, v in sorted(defines.items())]


class Module:
    """A compiled module; `launch(name, grid, block, *args)` runs a kernel with every launch
    checked (GALAXYVIEW_GPU_SYNC=1 also waits after each, to name a faulting kernel)."""

    def __init__(self, source: str, defines: dict | None = None, options=(), what="GPU kernels"):
        import pycuda.driver as cuda
        from pycuda.compiler import SourceModule

        self._cuda = cuda
        major, minor = cuda.Context.get_device().compute_capability()
        self.arch = f"sm_{major}{minor}"
        nvcc = find_nvcc() or "nvcc"
        flags = ["-O3", "-std=c++17", *defines_flags(defines or {}), *options,
                 *os.environ.get("GALAXYVIEW_NVCC_FLAGS", "").split()]
        try:
            self.module = SourceModule(source, nvcc=nvcc, arch=self.arch, no_extern_c=True,
                                       options=flags)
        except cuda.CompileError as exc:
            log = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()
            first = next((ln for ln in log if "error" in ln), log[0] if log else str(exc))
            raise EngineError(f"the {what} failed to compile for {self.arch}: {first.strip()} "
                              "(use --backend cpu, or check the CUDA toolkit)") from None
        except OSError as exc:
            raise EngineError(f"could not run the CUDA compiler {nvcc!r} ({exc}); "
                              "install the CUDA toolkit or use --backend cpu") from None
        self.functions = {}
        for name, fmt in kernel_formats(source).items():
            fn = self.module.get_function(name)
            fn.prepare(fmt)
            self.functions[name] = fn
        self.sync_each = os.environ.get("GALAXYVIEW_GPU_SYNC", "") not in ("", "0")

    def launch(self, name, grid, block, *args, stream=None):
        cuda = self._cuda
        try:
            self.functions[name].prepared_async_call(grid, block, stream, *args)
            if self.sync_each:
                cuda.Context.synchronize()
        except cuda.Error as exc:
            raise EngineError(f"GPU kernel {name} failed: {exc}; the GPU context may be "
                              "unusable: restart galaxyview or use --backend cpu") from None

    def _attribute(self, name, attr) -> int:
        return self.functions[name].get_attribute(getattr(self._cuda.function_attribute, attr))

    def regs(self, name) -> int:
        return self._attribute(name, "NUM_REGS")

    def max_threads(self, name) -> int:
        """The block size a kernel was compiled for (its __launch_bounds__)."""
        return self._attribute(name, "MAX_THREADS_PER_BLOCK")

    def static_smem(self, name) -> int:
        return self._attribute(name, "SHARED_SIZE_BYTES")
