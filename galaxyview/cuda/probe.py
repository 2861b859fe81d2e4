"""Can the GPU engine run here? One cached check: pycuda, a CUDA driver and device, nvcc."""
from __future__ import annotations

import functools
import os
import shutil

MIN_COMPUTE = (7, 0)


def find_nvcc() -> str | None:
    """Path of nvcc: on PATH, else under $CUDA_HOME / $CUDA_PATH or /usr/local/cuda."""
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    return None


@functools.lru_cache(maxsize=8)
def unavailable_reason(ordinal: int = 0) -> str | None:
    """None if the GPU engine can run here on device `ordinal`, else why not in one line."""
    try:
        import pycuda.driver as cuda
    except ImportError:
        return "pycuda is not installed (pip install 'galaxyview[gpu]')"
    except Exception as exc:  # a broken pycuda build (missing libcuda, ABI mismatch)
        return f"pycuda could not be loaded ({exc})"
    try:
        cuda.init()
        count = cuda.Device.count()
    except Exception as exc:
        return f"no usable CUDA driver ({exc})"
    if count == 0:
        return "no CUDA device found"
    if not 0 <= ordinal < count:
        return f"there is no CUDA device {ordinal} (this machine has {count}: 0..{count - 1})"
    cc = cuda.Device(ordinal).compute_capability()
    if cc < MIN_COMPUTE:
        return (f"the GPU's compute capability {cc[0]}.{cc[1]} is older than "
                f"{MIN_COMPUTE[0]}.{MIN_COMPUTE[1]}, the oldest the kernels support")
    if find_nvcc() is None:
        return ("nvcc (the CUDA compiler, which builds the kernels at first use) was not found "
                "on PATH, $CUDA_HOME or /usr/local/cuda")
    return None
