"""docs/modules.md is generated from the physics-module registry (tools/module_docs.py)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from galaxyview.engines import modules

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "python tools/module_docs.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("module_docs", ROOT / "tools" / "module_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def section(page: str, name: str) -> str:
    """The text of one module's section of the page."""
    start = page.index(f"### `{name}`\n")
    end = page.find("\n### ", start + 1)
    return page[start:] if end < 0 else page[start:end]


def test_committed_page_is_current(tool):
    committed = (ROOT / "docs" / "modules.md").read_text(encoding="utf-8")
    assert committed == tool.render(), (
        f"docs/modules.md differs from the module registry; regenerate it with `{REGENERATE}` "
        "and commit it")


def test_every_registered_module_and_kind_is_on_the_page(tool):
    page = tool.render()
    for what, registry in modules.REGISTRIES.items():
        for name in registry.names():
            text = section(page, name)
            for kind in modules.KINDS:
                listed = f"**{kind.upper()}**:" in text
                assert listed == (kind in registry.entry(name)), (name, kind)


def test_gravity_and_time_steps_match_the_cpu_classes(tool):
    """What ast reads of each class agrees with the imported CPU class (inherited too)."""
    page = tool.render()
    for name in modules.INTEGRATORS.names("cpu"):
        cls = modules.INTEGRATORS.get(name, "cpu")
        cpu_text = section(page, name).split("**GPU**")[0]
        assert f"- gravity: {cls.gravity or 'tree'}\n" in cpu_text, name
        assert ("individual time steps from `eta`" in cpu_text) == cls.uses_eta, name


def test_parameters_read_are_listed(tool):
    page = tool.render()
    assert "- reads: `dt`, `eps`, `eta`, `block_levels`" in section(page, "leapfrog-hier")
    assert "`restitution_of()`" in section(page, "hard-spheres")
    assert "- reads: nothing" in section(page, "leapfrog")


def test_a_new_module_makes_the_check_fail_and_regenerating_mends_it(tool, tmp_path, monkeypatch,
                                                                     capsys):
    out = tmp_path / "modules.md"
    monkeypatch.setattr(tool, "OUTPUT", out)
    assert tool.main([]) == 0 and tool.main(["--check"]) == 0
    monkeypatch.setitem(modules.INTEGRATORS._entries, "kdk-test",
                        {"cpu": "galaxyview.engines.integrators.leapfrog_cpu:Leapfrog"})
    assert tool.main(["--check"]) == 1
    assert REGENERATE in capsys.readouterr().err
    tool.main([])
    assert "### `kdk-test`" in out.read_text(encoding="utf-8")
    assert tool.main(["--check"]) == 0


def test_gpu_modules_are_read_without_pycuda(tmp_path):
    """The GPU classes are read with ast: with pycuda unimportable the page is still made,
    and no GPU module file was imported."""
    code = ("import sys; sys.modules['pycuda'] = None\n"
            "import runpy; ns = runpy.run_path('tools/module_docs.py')\n"
            "page = ns['render']()\n"
            "assert 'integrators.hermite_gpu:Hermite4' in page\n"
            "loaded = [m for m in sys.modules if m.startswith('galaxyview.engines') and "
            "m.endswith('_gpu')]\n"
            "assert not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)
