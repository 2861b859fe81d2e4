"""Checks made before any work that would end in writing a user's file."""
from __future__ import annotations

from pathlib import Path

from galaxyview.errors import GalaxyviewError


def check_output_path(path, overwrite: bool = False, error=GalaxyviewError) -> Path:
    """Refuse a folder, a missing folder and an existing file (unless overwrite); the error
    (of class `error`) names the path and the way out. Returns the path."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise error(f"{path} is a folder; give a file name inside it")
    folder = path.parent
    if not folder.exists():
        raise error(f"{path}: the folder {folder} does not exist; create it first "
                    f"(mkdir -p {folder}) or choose another folder")
    if not folder.is_dir():
        raise error(f"{path}: {folder} is not a folder")
    if path.exists() and not overwrite:
        raise error(f"{path} already exists; choose another name or pass --overwrite")
    return path
