"""GPU engine pieces that need no GPU: kernel signatures, import without pycuda, compilation."""
import re
import subprocess

import pytest

from galaxyview.engines.gpu import module, probe

CTYPES = {"int": "i", "unsigned": "I", "float": "f", "double": "d"}


def kernel_params(source: str) -> dict:
    """name -> pycuda format letters of each extern "C" kernel's parameters."""
    out = {}
    pattern = r'extern "C" __global__ void(?:\s+__launch_bounds__\([^)]*\))?\s+(\w+)\s*\(([^)]*)\)'
    for name, params in re.findall(pattern, source):
        letters = ""
        for p in params.split(","):
            p = p.replace("__restrict__", "").replace("const", "").strip()
            letters += "P" if "*" in p else CTYPES[p.split()[0]]
        out[name] = letters
    return out


def test_signatures_match_kernel_sources():
    params = kernel_params(module.source_text())
    assert set(params) == set(module.SIGNATURES)
    for name, sig in module.SIGNATURES.items():
        assert params[name] == sig, name


def test_probe_gives_a_reason_or_none():
    reason = probe.unavailable_reason()
    assert reason is None or (isinstance(reason, str) and "\n" not in reason and reason)


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_kernels_compile(tmp_path, arch):
    nvcc = probe.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not installed")
    src = tmp_path / "all.cu"
    src.write_text(module.source_text())
    run = subprocess.run([nvcc, f"-arch={arch}", "-std=c++17", "-O3", "-cubin", str(src), "-o",
                          str(tmp_path / "all.cubin"), "-Xptxas", "-v"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    walk = run.stderr.split("Compiling entry function 'walk'")[1].split("Compiling")[0]
    assert "0 bytes spill stores" in walk  # the walk keeps its interaction state on chip


def test_no_gpu_gives_a_clear_engine_error():
    from galaxyview.engines import create_engine
    from galaxyview.engines.gpu.engine import GPUEngine
    from galaxyview.errors import EngineError

    reason = probe.unavailable_reason()
    if reason is None:
        pytest.skip("a usable GPU is present here")
    with pytest.raises(EngineError, match="--backend gpu"):
        create_engine("gpu")
    with pytest.raises(EngineError, match="cannot run here"):
        GPUEngine()
