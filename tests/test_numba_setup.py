"""numba configured in one place (galaxyview/numba_setup.py): every entry point compiles the
kernels for the same CPU features, so numba's disk cache holds one copy and the next entry
point loads it; the "compiling" line shows only when the kernels are compiled."""
import json
import os
import re
import subprocess
import sys
import textwrap

import numba
import pytest
from llvmlite import binding as llvm

import galaxyview
from galaxyview import numba_setup

ROOT = os.path.dirname(galaxyview.__file__)
DECORATES = re.compile(r"\bnjit\b|@(numba\.)?jit\b|^\s*from numba import", re.M)

# an entry point run under a CPU that claims AVX-512: `avx512f` reads True, but the features
# numba compiles for are the host's own (the code still runs here); at exit it writes numba's
# configured and actual (codegen) CPU features to the file named first
ENTRY = textwrap.dedent("""
    import atexit, json, runpy, sys
    from llvmlite import binding as llvm

    real = llvm.get_host_cpu_features
    class Wide(type(real())):
        def get(self, key, default=None):
            return True if key == "avx512f" else super().get(key, default)
    def wide():
        m = Wide()
        m.update(real())
        return m
    llvm.get_host_cpu_features = wide
    out, how = sys.argv[1], sys.argv[2]

    def report():
        import numba
        from galaxyview.numba_setup import target_features
        with open(out, "w") as f:
            json.dump({"config": numba.config.CPU_FEATURES, "target": target_features()}, f)
    atexit.register(report)
    if how == "cli":
        sys.argv = ["galaxyview", *sys.argv[3:]]
        runpy.run_module("galaxyview", run_name="__main__", alter_sys=True)
    else:
        if how == "light-first":  # a kernel outside the engine decorated first
            import galaxyview.light.kernel
        import galaxyview as gv
        with gv.open("plummer", backend="cpu", n=512) as sim:
            sim.step(1)
""")


def _cache_files(root):
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
            for d, _, files in os.walk(root) for f in files}


@pytest.mark.slow
def test_entry_points_share_one_compiled_copy(tmp_path):
    """CLI first (compiles, says so), then the API and a process that decorates the light
    kernel first: both load the CLI's kernels (no cache file written), say nothing about
    compiling, and compile for the same features: 512-bit vectors allowed."""
    entry = tmp_path / "entry.py"
    entry.write_text(ENTRY)
    cache = tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "xc"),
           "GALAXYVIEW_THREADS": "2", "PYTHONPATH": os.path.dirname(ROOT)}
    for name in ("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME"):
        env.pop(name, None)

    def run(how, *args):
        out = tmp_path / f"{how}.json"
        done = subprocess.run([sys.executable, str(entry), str(out), how, *args], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(out.read_text()), done.stderr

    cli, cli_err = run("cli", "run", "plummer", "--backend", "cpu", "--n", "512", "--steps", "1")
    assert "compiling the CPU engine (first start only)" in cli_err
    assert cli["config"].endswith(",-prefer-256-bit") and cli["target"] == cli["config"]
    after_cli = _cache_files(cache)
    assert after_cli
    for how in ("api", "light-first"):
        features, err = run(how)
        assert features == cli, how
        assert "compiling" not in err, how
        assert _cache_files(cache) == after_cli, f"{how} compiled kernels again"


def test_wide_vectors_only_with_avx512(monkeypatch):
    monkeypatch.setattr(numba.config, "CPU_FEATURES", None)
    monkeypatch.setattr(numba.config, "CPU_NAME", None)
    host = llvm.get_host_cpu_features()
    narrow = type(host)()
    narrow.update({k: v for k, v in host.items() if not k.startswith("avx512")})
    narrow["avx2"] = True
    assert not numba_setup.wide_vectors(narrow)  # AVX2 (or arm64's NEON): left alone
    assert numba.config.CPU_FEATURES is None
    wide = type(host)()
    wide.update({**narrow, "avx512f": True})
    monkeypatch.setattr(numba_setup, "target_ready", lambda: True)
    assert not numba_setup.wide_vectors(wide)  # numba's target was set up before: too late
    assert numba.config.CPU_FEATURES is None
    monkeypatch.setattr(numba_setup, "target_ready", lambda: False)
    assert numba_setup.wide_vectors(wide)
    assert numba.config.CPU_FEATURES == wide.flatten() + ",-prefer-256-bit"
    monkeypatch.setattr(numba.config, "CPU_FEATURES", None)
    monkeypatch.setattr(numba.config, "CPU_NAME", "skylake-avx512")  # the user's choice
    assert not numba_setup.wide_vectors(wide) and numba.config.CPU_FEATURES is None


def test_wide_vectors_where_llvm_cannot_list_features(monkeypatch):
    """LLVM raises where it cannot read the host's features (numba then uses none): left
    alone, importing galaxyview still works."""
    def unreadable():
        raise RuntimeError("failed to get host cpu features")

    monkeypatch.setattr(numba.config, "CPU_FEATURES", None)
    monkeypatch.setattr(numba.config, "CPU_NAME", None)
    monkeypatch.setattr(numba_setup, "target_ready", lambda: False)
    monkeypatch.setattr(numba_setup.llvm, "get_host_cpu_features", unreadable)
    assert not numba_setup.wide_vectors() and numba.config.CPU_FEATURES is None


def test_kernels_in_the_package_are_made_through_numba_setup():
    """No module decorates with numba directly (import-linter forbids importing numba outside
    numba_setup and engines/cpu_numba; this catches a decorator there too)."""
    found = []
    for d, _, files in os.walk(ROOT):
        for f in files:
            path = os.path.join(d, f)
            if f.endswith(".py") and not path.endswith("numba_setup.py"):
                text = open(path, encoding="utf-8").read()
                if DECORATES.search(text):
                    found.append(os.path.relpath(path, ROOT))
    assert not found
