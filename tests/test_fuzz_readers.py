"""A standing fuzz of every reader (tools/fuzz_readers.py): damaged copies of a galaxyview
snapshot and archive, Gadget-2 binary, Gadget-4 and SWIFT HDF5, Tipsy and its .param, a scene
TOML, loaded in a worker whose address space is bounded (64 bytes a file byte beyond a fixed
allowance), so a reader that allocates for what a header promises fails here, not the machine."""
import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "fuzz_readers.py"


def _tool():
    spec = importlib.util.spec_from_file_location("fuzz_readers", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_every_reader_ends_in_a_clear_error_or_a_good_load(tmp_path):
    fuzz = _tool()
    results = fuzz.fuzz(cases=60, seed=41, timeout=90, folder=tmp_path)
    assert {fmt for fmt, _, _ in results} == set(fuzz.FORMATS)
    bad = [r for r in results if r[1] not in ("clear error", "good load")]
    assert not bad, fuzz.table(results) + "\n" + "\n".join(map(str, bad[:10]))
    assert sum(r[1] == "clear error" for r in results) > len(results) // 4  # damage was done
