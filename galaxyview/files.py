"""Checks made before any work that would end in writing a user's file; reading one that
is a regular file, no more than its size."""
from __future__ import annotations

import errno
import os
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


def special_file(path) -> str | None:
    """What `path` is when it exists but is not a regular file (a FIFO, a device, a socket),
    else None: reading one may block for ever or never end (/dev/zero)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else
            "a character device" if stat.S_ISCHR(mode) else
            "a block device" if stat.S_ISBLK(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def check_regular(path, error=GalaxyviewError, what: str = "file") -> None:
    """Refuse (an `error` naming the path) a path that is a FIFO, a device or a socket."""
    kind = special_file(path)
    if kind is not None:
        raise error(f"{path}: {kind}, not a regular file; give the path of a {what} saved "
                    f"on disk")


def read_bytes(path, error=GalaxyviewError, what: str = "file") -> bytes:
    """The bytes of regular file `path`, at most its size at opening (a file that grows
    while it is read is cut there); `error` for a FIFO, a device or a socket. The open does
    not block on a FIFO. OSError (FileNotFoundError, ...) passes to the caller."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(info.st_mode):
            check_regular(path, error, what)
            raise error(f"{path}: not a regular file; give the path of a {what} saved on disk")
        return f.read(info.st_size)
