"""The tests' own folders (conftest.py `own_folders`): a test's settings, config and caches
never reach the user's, and one test's settings are not the next one's. (The two window
tests run in this order, the second seeing what the first wrote where the fixture fails.)"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL_HOME

pytestmark = pytest.mark.gui


def _settings():
    from galaxyview.app import settings

    return settings.open_settings()


def test_the_viewers_settings_are_written_in_the_tests_folder(tmp_path_factory):
    s = _settings()
    path = Path(s.fileName())
    assert path.is_relative_to(tmp_path_factory.getbasetemp()), path
    assert not path.is_relative_to(REAL_HOME / ".config"), path
    s.setValue("scene/last", "written-by-a-test")
    s.sync()
    assert path.is_file() and "written-by-a-test" in path.read_text()


def test_the_next_test_does_not_see_them(tmp_path_factory):
    s = _settings()
    assert Path(s.fileName()).is_relative_to(tmp_path_factory.getbasetemp())
    assert s.value("scene/last") != "written-by-a-test"


def test_a_process_a_test_starts_keeps_its_settings_there_too(tmp_path_factory):
    code = ("from PyQt6.QtCore import QSettings, QStandardPaths as P; "
            "print(QSettings('galaxyview', 'viewer').fileName()); "
            "print(P.writableLocation(P.StandardLocation.CacheLocation))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split("\n")
    base = tmp_path_factory.getbasetemp()
    assert Path(out[0]).is_relative_to(base) and Path(out[1]).is_relative_to(base), out
    assert Path(os.environ["HOME"]).is_relative_to(base) and Path.home() != REAL_HOME
