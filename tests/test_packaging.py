"""A release that installs anywhere: one version, the viewer's Qt optional, the library's
warnings through logging (shown by the command line), no print() in library code."""
from __future__ import annotations

import ast
import importlib.metadata
import logging
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import galaxyview
from galaxyview.cli.main import main
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.snapshots.tipsy import save_state
from galaxyview.snapshots import read

PACKAGE = Path(galaxyview.__file__).parent
ROOT = PACKAGE.parent


def test_one_version_source():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in meta["project"] and "version" in meta["project"]["dynamic"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "galaxyview.version.__version__"}
    assert importlib.metadata.version("galaxyview") == galaxyview.__version__


def _prints(path: Path) -> list[int]:
    """Lines of print() calls, except in main() of a module run as a script (python -m)."""
    tree = ast.parse(path.read_text(), str(path))
    script = any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
                 for node in tree.body)
    exempt = set()
    if script:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "main":
                exempt |= {id(n) for n in ast.walk(node)}
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "print" and id(node) not in exempt]


def test_library_code_has_no_print():
    """The library warns through logging.getLogger(__name__) and returns what a command
    prints; only the command line (cli/), the window (app/) and python -m scripts print."""
    found = [f"{path.relative_to(ROOT)}:{line}"
             for path in sorted(PACKAGE.rglob("*.py"))
             if path.relative_to(PACKAGE).parts[0] not in ("cli", "app")
             for line in _prints(path)]
    assert not found, "print() in library code: " + ", ".join(found)


def test_library_warning_reaches_the_cli_stderr_as_one_plain_line(tmp_path, capsys):
    path = tmp_path / "bare.tipsy"
    save_state(path, plummer_sphere(64, np.random.default_rng(1)))  # no .param beside it
    assert main(["run", str(path), "--steps", "1", "--backend", "reference"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "warning" in line]
    assert lines == [f"galaxyview: warning: {path}: no bare.tipsy.param beside it; read in "
                     "N-body units (G = 1), with the default dt, theta and eps unless given"]


def _gadget_binary(path: Path, n: int) -> Path:
    """A Gadget-2 binary (format 1) of n halo particles of mass 1/n."""
    npart = [0, n, 0, 0, 0, 0]
    header = struct.pack("<6i6d2d2i6I2i4d", *npart, 0, 1 / n, 0, 0, 0, 0, 0.0, 0.0, 0, 0,
                         *npart, 0, 1, 0.0, 0.0, 0.0, 1.0)
    pos = np.random.default_rng(2).standard_normal((n, 3))
    out = b""
    for payload in (header + b"\0" * (256 - len(header)), pos.astype("<f4").tobytes(),
                    np.zeros((n, 3), "<f4").tobytes(), np.arange(n, dtype="<u4").tobytes()):
        out += struct.pack("<i", len(payload)) + payload + struct.pack("<i", len(payload))
    path.write_bytes(out)
    return path


def _gadget_hdf5(path: Path, n: int, units: bool) -> Path:
    import h5py

    with h5py.File(path, "w") as f:
        header = f.create_group("Header")
        header.attrs["NumPart_ThisFile"] = np.array([0, n, 0, 0, 0, 0], np.int32)
        header.attrs["MassTable"] = np.array([0, 1 / n, 0, 0, 0, 0])
        if units:
            header.attrs["UnitLength_in_cm"] = 3.0e21
            header.attrs["UnitMass_in_g"] = 2.0e43
            header.attrs["UnitVelocity_in_cm_per_s"] = 1.0e5
        group = f.create_group("PartType1")
        group["Coordinates"] = np.random.default_rng(2).standard_normal((n, 3))
        group["Velocities"] = np.zeros((n, 3))
    return path


@pytest.mark.parametrize("make, warned", [
    (lambda d: _gadget_binary(d / "snap_000", 32), "a Gadget binary file carries no units"),
    (lambda d: _gadget_hdf5(d / "snap.hdf5", 32, units=True), None),
])
def test_gadget_logs_its_assumed_units(tmp_path, caplog, make, warned):
    with caplog.at_level(logging.WARNING, logger="galaxyview"):
        snap = read(make(tmp_path))
    assert snap.state.n == 32
    records = [r for r in caplog.records if r.name.startswith("galaxyview")]
    if warned is None:
        assert records == []
        return
    [record] = records
    assert record.levelno == logging.WARNING and record.name == "galaxyview.snapshots.gadget"
    assert f"{warned}: Gadget's default units assumed" in record.getMessage()


def test_viewer_without_qt_says_how_to_install_it(tmp_path):
    """No PyQt6: `galaxyview antennae` prints one line naming the install command, exits 2."""
    code = textwrap.dedent("""
        import sys
        sys.modules["PyQt6"] = None  # as in an environment without the [viewer] extra
        from galaxyview.cli.main import main
        sys.exit(main(sys.argv[1:]))
    """)
    for argv in (["antennae"], ["show"]):
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        [line] = done.stderr.splitlines()
        assert "galaxyview[viewer]" in line and line.startswith("galaxyview") and \
            "error: the viewer needs Qt (PyQt6)" in line
