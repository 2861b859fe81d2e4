"""Checks made before any work that would end in writing a user's file."""
from __future__ import annotations

from pathlib import Path

from galaxyview.errors import GalaxyviewError


def check_output_path(path, overwrite: bool = False, error=GalaxyviewError,
                      replace: str = "pass --overwrite") -> Path:
    """Refuse a folder, a missing folder and an existing file (unless overwrite); the error
    (of class `error`) names the path and the way out (`replace`: how to allow replacing a
    file, the command line's by default). Returns the path."""
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
        raise error(f"{path} already exists; choose another name, or {replace}")
    return path


def check_free_space(path, need_bytes: int, what: str, error=GalaxyviewError) -> None:
    """Refuse (an `error` naming the folder, the space needed and free) when `need_bytes`
    more than the free space of the folder of `path`."""
    import shutil

    folder = Path(path).expanduser().parent
    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return  # not measurable here: the writes themselves report a full disk
    if usage.total == 0:
        raise error(f"{path}: {folder} stores no files (a virtual file system); write to "
                    f"another folder")
    free = usage.free
    if need_bytes > free:
        raise error(f"{path}: {what} needs about {_size(need_bytes)}, but {folder} has only "
                    f"{_size(free)} free; free some space, write to another folder or save "
                    f"less often")


def _size(n: float) -> str:
    if n < 1000:
        return f"{n:.0f} bytes"
    for unit in ("kB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            return f"{n:.1f} {unit}"
