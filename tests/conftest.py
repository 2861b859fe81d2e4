"""Tests marked gpu are skipped, with the reason, where the GPU engine cannot run; tests
marked gui where Qt (PyQt6) is absent, as on the GPU machines.

Every test has its own home, settings, config, data and cache folders (`own_folders`), so
no test reads or writes the user's (~/.config/galaxyview/viewer.conf, caches), and the
processes a test starts inherit them. numba's compiled kernels stay cached where they were:
beside the sources (__pycache__) when that folder is writable, which HOME does not move; else
in the user's cache folder, which NUMBA_CACHE_DIR pins here before numba is imported."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

REAL_HOME = Path.home()


def _pin_numba_cache() -> None:
    """Where the kernels' folder is read-only, numba caches in the user's cache folder: keep
    that the real one (set before numba reads its configuration)."""
    kernels = Path(__file__).parent.parent / "galaxyview" / "engines" / "cpu_numba"
    if "NUMBA_CACHE_DIR" in os.environ or "numba" in sys.modules or os.access(kernels, os.W_OK):
        return
    cache = os.environ.get("XDG_CACHE_HOME") or str(REAL_HOME / ".cache")
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")


_pin_numba_cache()


@pytest.fixture(autouse=True)
def own_folders(tmp_path_factory, monkeypatch):
    """HOME and the XDG folders in a fresh temporary folder; Qt's settings there too."""
    home = tmp_path_factory.mktemp("home")
    folders = {"HOME": home, "XDG_CONFIG_HOME": home / ".config",
               "XDG_CACHE_HOME": home / ".cache", "XDG_DATA_HOME": home / ".local" / "share",
               "XDG_STATE_HOME": home / ".local" / "state"}
    for name, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(name, str(folder))
    qt = sys.modules.get("PyQt6.QtCore")
    if qt is not None:  # QSettings keeps the folder it found first: set it for this test
        settings = qt.QSettings
        for fmt in (settings.Format.NativeFormat, settings.Format.IniFormat):
            settings.setPath(fmt, settings.Scope.UserScope, str(folders["XDG_CONFIG_HOME"]))
    yield folders


def _skip(items, marker, reason):
    chosen = [item for item in items if item.get_closest_marker(marker)]
    if chosen and reason:
        for item in chosen:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("PyQt6") is None:
        _skip(items, "gui", "the window needs Qt: PyQt6 is not installed")
    if any(item.get_closest_marker("gpu") for item in items):
        from galaxyview.engines import gpu_unavailable_reason

        reason = gpu_unavailable_reason()
        _skip(items, "gpu", reason and f"GPU engine unavailable: {reason}")
