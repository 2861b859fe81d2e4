"""The snapshot formats, in the order their `sniff` is asked (docs/snapshot-format.md): reading
goes by a file's content, writing by its name (the first writable format with its suffix) or
a format named. The command line, the API, the window's open dialog and the messages list
formats and suffixes from here."""
from __future__ import annotations

import importlib
from pathlib import Path

from galaxyview.errors import ParameterError, SnapshotError
from galaxyview.files import check_regular
from galaxyview.snapshots.format import Format
from galaxyview.snapshots.hdf5 import is_hdf5


class Registry:
    """Format classes in priority order, each a class or "package.module:Class" (imported when
    first needed)."""

    def __init__(self):
        self._entries: list = []
        self._made: dict = {}

    def add(self, entry, before: str | None = None) -> None:
        """Add a format, last or before the format named `before`."""
        at = len(self._entries) if before is None else self.names().index(before)
        self._entries.insert(at, entry)

    def remove(self, name: str) -> None:
        self._entries = [e for e in self._entries if self._format(e).name != name]

    def _format(self, entry) -> Format:
        if entry not in self._made:
            cls = entry
            if isinstance(entry, str):
                module, _, name = entry.partition(":")
                cls = getattr(importlib.import_module(module), name)
            if not (isinstance(cls, type) and issubclass(cls, Format)):
                raise TypeError(f"snapshot format {entry!r} is not a Format class")
            self._made[entry] = cls()
        return self._made[entry]

    def all(self) -> list[Format]:
        return [self._format(e) for e in self._entries]

    def names(self) -> list[str]:
        return [f.name for f in self.all()]

    def get(self, name: str) -> Format:
        found = next((f for f in self.all() if f.name == name), None)
        if found is None:
            raise SnapshotError(f"unknown snapshot format {name!r}; known: "
                                f"{', '.join(self.names())}")
        return found


FORMATS = Registry()
FORMATS.add("galaxyview.snapshots.formats.galaxyview:Galaxyview")
FORMATS.add("galaxyview.snapshots.formats.gadget_binary:GadgetBinary")
FORMATS.add("galaxyview.snapshots.formats.gadget4:Gadget4")
FORMATS.add("galaxyview.snapshots.formats.swift:Swift")
FORMATS.add("galaxyview.snapshots.formats.tipsy:Tipsy")
FORMATS.add("galaxyview.snapshots.formats.pynbody:Pynbody")


def suffixes() -> tuple[str, ...]:
    """Every suffix a format's files take, once each."""
    return tuple(dict.fromkeys(s for f in FORMATS.all() for s in f.suffixes))


def accepted_formats() -> str:
    """What galaxyview reads, for messages."""
    known = [f.title for f in FORMATS.all()]
    return ("galaxyview reads scene files (TOML, or a shipped scene's name), "
            f"{', '.join(known[:-1])} and {known[-1]}")


def open_filter() -> str:
    """The open dialog's filter: scenes and every format, then each format, then all files."""
    def globs(sfx):
        return " ".join(f"*{s}" for s in sfx)

    each = [f"{f.title} ({globs(f.suffixes)})" for f in FORMATS.all() if f.suffixes]
    return ";;".join([f"Scenes, snapshots and archives (*.toml {globs(suffixes())})", *each,
                      "All files (*)"])


def sniffed(path) -> Format | None:
    """The first format (fallbacks aside) whose sniff takes the file."""
    return next((f for f in FORMATS.all() if not f.fallback and f.sniff(Path(path))), None)


def read(path, index: int | None = None):
    """The Snapshot in file `path` (of a format holding several: snapshot `index`, default the
    last), its format told by its content."""
    path = Path(path)
    if not path.exists():
        raise SnapshotError(f"{path}: no such file; check the path")
    if path.is_dir():
        raise SnapshotError(f"{path}: is a folder; give the path of a snapshot file")
    check_regular(path, SnapshotError, "snapshot")
    try:
        with open(path, "rb") as f:
            f.read(16)
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    fmt = sniffed(path)
    if fmt is None:
        for other in FORMATS.all():  # not for a fallback: pynbody pads a short file with zeros
            damaged = other.damage(path)
            if damaged is not None:
                raise damaged
    if index is not None and not (fmt is not None and fmt.indexed):
        several = " or ".join(f.title for f in FORMATS.all() if f.indexed)
        raise SnapshotError(f"{path}: a snapshot index ({index}) applies to files of several "
                            f"snapshots only ({several})")
    fmt = fmt or next((f for f in FORMATS.all() if f.fallback and f.sniff(path)), None)
    if fmt is None:
        what = ("an HDF5 file, but in none of the layouts galaxyview reads" if is_hdf5(path)
                else "not a format galaxyview knows")
        raise SnapshotError(f"{path}: {what}. {accepted_formats()}")
    return fmt.read(path, index)


def looks_like_snapshot(path: Path) -> bool:
    """A snapshot by its name, or a file whose content is one (binary, or a format's sniff
    takes it); scene files (.toml, text) and scene names are not."""
    if path.suffix.lower() in suffixes():
        return True
    if path.suffix.lower() == ".toml" or not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            f.read(4096).decode("utf-8")
    except UnicodeDecodeError:
        return True
    except OSError:
        return False
    try:
        return sniffed(path) is not None
    except SnapshotError:  # a damaged file of a known format: reading it says so
        return True


def writable() -> list[Format]:
    return [f for f in FORMATS.all() if f.writable]


def save_suffixes() -> str:
    """The names a state may be saved under without a format named, for messages."""
    taken, parts = set(), []
    for f in writable():
        own = [s for s in f.suffixes if s not in taken]
        taken.update(own)
        if own:
            parts.append(f"{', '.join(own)} for {f.title}")
    return " or ".join(parts)


def save_format(path, format: str | None = None) -> Format:
    """The format `path` is written in: `format` (a writable format's `choice`) or, with None,
    the first writable format whose suffixes have the name's; SnapshotError for a name that
    does not fit (checked before a run, not after)."""
    choices = [f.choice for f in writable()]
    if format not in (None, *choices):
        raise ParameterError(f"format must be one of {', '.join(choices)} (or None: by the "
                             f"file's name), got {format!r}")
    suffix = Path(path).suffix.lower()
    if format is not None:
        fmt = next(f for f in writable() if f.choice == format)
        if suffix not in fmt.suffixes:
            raise SnapshotError(f"{path}: {fmt.title} is written to a name ending in "
                                f"{' or '.join(fmt.suffixes)}; give a name ending in "
                                f"{' or '.join(fmt.suffixes)}")
        return fmt
    fmt = next((f for f in writable() if suffix in f.suffixes), None)
    if fmt is None:
        raise SnapshotError(f"{path}: give a name ending in {save_suffixes()}")
    return fmt
