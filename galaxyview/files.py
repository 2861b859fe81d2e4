"""Writing a user's file safely: checks made before any work, names made from data
(`safe_name`), and temporary files beside the target (`open_temp`, `temp_beside`); reading one
that is a regular file, no more than its size (`read_bytes`).

A temporary file is `.NAME.galaxyview-PID-RANDOM.SUFFIX` (hidden, unique, never a user's
file); the write renames it onto NAME when complete. One left by a process that was killed
(SIGKILL, a power cut) is removed by the next `open_temp` for the same NAME once its process
is gone and the file is older than the current process: the pattern is galaxyview's alone.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import time
import unicodedata
from pathlib import Path

from galaxyview.errors import GalaxyviewError

log = logging.getLogger(__name__)
_STARTED = time.time()  # (about) when this process started: older temporary files are stale
TEMP_TAG = "galaxyview"


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


def safe_name(text, fallback: str = "galaxyview", limit: int = 80) -> str:
    """A file name made from data (a scene's name, a title): one path component of letters,
    digits and `-_.+`, other runs of characters (`/`, spaces, `..`) as `_` or `.`; no leading
    dot; at most `limit` characters; `fallback` when nothing is left. "NGC 4038/39" gives
    "NGC_4038_39", "../x" gives "x"."""
    text = unicodedata.normalize("NFC", str(text))
    name = re.sub(r"\.{2,}", ".", re.sub(r"[^\w.+-]+", "_", text))
    name = name.strip("._-")[:limit].rstrip("._-")
    return name or fallback


def _temp_pattern(path: Path | None) -> re.Pattern:
    """Temporary files of `path`'s name, or of any name (None)."""
    name = re.escape(path.name) if path is not None else ".+"
    return re.compile(rf"\.{name}\.{TEMP_TAG}-(\d+)-[0-9a-f]{{8}}\.(part|tmp)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (EPERM: another user's process)
        return True
    return True


def remove_stale_temps(path, any_name: bool = False) -> list[Path]:
    """Remove the temporary files of `path` that a killed galaxyview process left: its name
    pattern, its process gone, older than this process (`any_name`: those of every name in
    `path`'s folder, e.g. numbered frames). Returns those removed."""
    path = Path(path)
    pattern, removed = _temp_pattern(None if any_name else path), []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or int(match[1]) == os.getpid() or _alive(int(match[1])):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= _STARTED or \
                    not entry.is_file(follow_symlinks=False):
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        log.warning("removed %s, a temporary file left by a galaxyview process (%s) that was "
                    "killed while writing %s", entry.path, match[1], path.name)
        removed.append(Path(entry.path))
    return removed


def open_temp(path, suffix: str = ".tmp", clean: bool = True) -> tuple[Path, int]:
    """A new hidden temporary file beside `path` (`suffix` .tmp or .part; permissions from the
    umask), after removing stale ones (unless `clean` is False: a writer of many files cleans
    their folder once, remove_stale_temps(any_name=True)): (its path, a file descriptor open
    for writing). OSError where the folder refuses it."""
    path = Path(path)
    if clean:
        remove_stale_temps(path)
    for _ in range(20):
        temp = path.with_name(f".{path.name}.{TEMP_TAG}-{os.getpid()}-{secrets.token_hex(4)}"
                              f"{suffix}")
        try:
            return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: cannot make a temporary file name in {path.parent}")


def remove_quietly(path) -> None:
    """Remove a temporary file; a folder that refuses (read-only: EROFS, EACCES) or a file
    already gone is no error, so the write's own error is the one reported."""
    with contextlib.suppress(OSError):
        os.unlink(path)


@contextlib.contextmanager
def temp_beside(path, suffix: str = ".tmp"):
    """`open_temp` as (path, binary file); the temporary file is removed on leaving unless the
    body renamed it into place (os.replace)."""
    temp, fd = open_temp(path, suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            yield temp, f
    finally:
        remove_quietly(temp)
