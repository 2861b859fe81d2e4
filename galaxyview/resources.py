"""Locate the project's data folders (kernels/, shaders/, scenes/).

From a checkout (or an editable install) they sit beside the package; in a wheel they are
installed as galaxyview/_data/<name>.
"""
from __future__ import annotations

from pathlib import Path

from galaxyview.errors import GalaxyviewError

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` (one of kernels, shaders, scenes)."""
    for candidate in (_PACKAGE.parent / name, _PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise GalaxyviewError(
        f"galaxyview's '{name}' folder is missing (looked beside the package and in "
        f"galaxyview/_data); reinstall galaxyview"
    )


def kernels_dir() -> Path:
    return data_dir("kernels")


def shaders_dir() -> Path:
    return data_dir("shaders")


def scenes_dir() -> Path:
    return data_dir("scenes")
