"""GPU engine pieces that need no GPU: kernel signatures read off the sources, the shared
constants, import without pycuda, compilation with nvcc where it is installed."""
import re
import subprocess

import pytest

from galaxyview.cuda import probe
from galaxyview.cuda.compile import defines_flags, kernel_formats, read_kernel
from galaxyview.engines.gpu import constants, module
from galaxyview.errors import EngineError
from galaxyview.resources import kernels_dir

LEAPFROG = [("integrator_leapfrog.cu", read_kernel("integrator_leapfrog.cu"))]
MODULES = LEAPFROG + [("integrator_hermite.cu", read_kernel("integrator_hermite.cu"))]

# The launch formats as they were declared by hand before they were read off the sources.
EXPECTED = {
    "bbox_partial": "PiPP", "bbox_final": "PiP", "make_keys": "PiPPP", "radix_hist": "PiiPi",
    "scan_excl": "PPiPPI", "radix_scatter": "PPPPiiPPi", "reorder": "PiPPPPPP",
    "tree_init": "iPPPPP", "build_level": "iiiPPPPPPPPPPPI", "make_groups": "iiiiPPPPPPPI",
    "multipoles_level": "idPPPPPPPPPPPPPPPP", "walk": "PPPPPPPPPPffi",
    "walk_ext": "PPPPPPPPPPffiPPffffi", "walk_roots": "PPPPPPPPPPffiiiii",
    "compact_active": "iPPiPPPPPI", "reorder_acc": "PiPP",
    "direct_forces": "PiffP",
    "direct_sample_f64": "PiPddP", "kick_drift": "PPPiff", "advance": "PPif",
    "energy_sums": "PPPiP", "masked_com": "PPPiP", "cell_boxes": "iiPPPPP",
    "invert_ids": "PiP", "sample_forces_mixed": "PPiPPffffdP", "cell_density": "iPiPPPPP",
    "gather_by_id": "PPiP", "direct_potential_energy": "PifP",
}
HERMITE = {
    "herm_init": "PPiPPPP", "herm_predict": "iPdPPPPPPPPPPP", "herm_forces": "PPiPPPfP",
    "herm_first": "iPiiPdPPiddiPP", "herm_schedule": "PPii", "herm_count": "iPP",
    "herm_shift": "iiiiP", "herm_correct": "PPPdddiPPPPPPPP", "herm_store": "iPiiPdPPPPPPPP",
}


def test_launch_formats_are_read_off_the_kernel_sources():
    assert kernel_formats(module.source_text(LEAPFROG)) == EXPECTED
    assert kernel_formats(read_kernel("integrator_hermite.cu")) == HERMITE
    render = kernel_formats((kernels_dir() / "render_pack.cu").read_text())
    assert render == {"pack_vertices": "PPPPPPiQi"}  # pos4 vel4 acc4 vals radius out n stride value
    assert kernel_formats((kernels_dir() / "render_splat.cu").read_text()) == {"splat": "PiPPii"}


def test_signature_parser_on_its_own():
    src = '''
    // extern "C" __global__ void commented(int a) {}
    /* extern "C" __global__ void blocked(float b) {} */
    extern "C" __global__ void __launch_bounds__(128, 2)
    k(const float4* __restrict__ p, unsigned long long s, const double d,
      unsigned int u, long long q) {}
    '''
    assert kernel_formats(src) == {"k": "PQdIq"}
    with pytest.raises(EngineError, match="float3 v"):
        kernel_formats('extern "C" __global__ void bad(float3 v) {}')


def test_shared_constants_are_defined_once():
    text = module.source_text(LEAPFROG)
    used = set(re.findall(r"\b((?:ST|FLAG)_[A-Z0-9_]+|MAX_LEVEL|STACK_CAP|SORT_\w+|SCAN_\w+|RADIX)\b",
                          text))
    defines = constants.defines()
    assert used <= set(defines), used - set(defines)
    defined_in_c = set(re.findall(r"#define\s+(\w+)", text))
    assert not defined_in_c & set(defines), defined_in_c & set(defines)
    assert defines["SORT_TILE"] == defines["SORT_THREADS"] * defines["SORT_ITEMS"]
    assert constants.MAX_LEVEL == 21


def test_probe_gives_a_reason_or_none():
    for ordinal in (0, 1000):
        reason = probe.unavailable_reason(ordinal)
        assert reason is None or (isinstance(reason, str) and "\n" not in reason and reason)
    assert probe.unavailable_reason(1000) is not None  # no machine has 1001 GPUs


def _nvcc(tmp_path, text, arch, *flags):
    nvcc = probe.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not installed")
    src = tmp_path / "all.cu"
    src.write_text(text)
    return subprocess.run([nvcc, f"-arch={arch}", "-std=c++17", "-O3", "-cubin", str(src), "-o",
                           str(tmp_path / "all.cubin"), "-Xptxas", "-v", *flags],
                          capture_output=True, text=True)


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
@pytest.mark.slow
def test_kernels_compile(tmp_path, arch):
    run = _nvcc(tmp_path, module.source_text(MODULES), arch,
                *defines_flags(constants.defines()))
    assert run.returncode == 0, run.stderr[-2000:]
    for kernel in ("walk", "herm_forces"):  # the force loops keep their state on chip
        info = run.stderr.split(f"Compiling entry function '{kernel}'")[1].split("Compiling")[0]
        assert "0 bytes spill stores" in info, info


def test_kernels_refuse_to_compile_without_the_constants(tmp_path):
    run = _nvcc(tmp_path, module.source_text(), "sm_90")
    assert run.returncode != 0 and "engines/gpu/constants.py" in run.stderr


def test_no_gpu_gives_a_clear_engine_error():
    from galaxyview.engines import create_engine
    from galaxyview.engines.gpu.engine import GPUEngine

    reason = probe.unavailable_reason()
    if reason is None:
        pytest.skip("a usable GPU is present here")
    with pytest.raises(EngineError, match="--backend gpu"):
        create_engine("gpu")
    with pytest.raises(EngineError, match="cannot run here"):
        GPUEngine()
