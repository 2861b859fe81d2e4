"""A snapshot format: how its files are told (`sniff`), read and, where it is writable,
written. One class a format, one line in snapshots/registry.py (docs/snapshot-format.md,
"Adding a format")."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from galaxyview.errors import SnapshotError
from galaxyview.model.exact import ExactState
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem


@dataclass
class Contents:
    """What a writer may take of a run; the costly parts are functions, called only by the
    format that needs them."""

    state: Callable[[], ParticleState]
    exact: Callable[[], ExactState]  # the engine's own state (galaxyview's exact restarts)
    potential: Callable[[], object]  # each particle's potential, in the state's order
    run: Callable[[], object]  # the run's archive.RunInfo
    params: Params
    units: UnitSystem | None


class Format:
    """name: the Snapshot's `format` and the registry's key; title: for people (lists, messages,
    the open dialog); suffixes: the names its files take (the first, when writing, is the one
    asked for); save_as: the name `--format` and `save(format=)` take (default: name);
    indexed: a file holds several snapshots (read's `index`); fallback: tried only after every
    other format has refused a file (it reads what it can, e.g. pynbody)."""

    name = "?"
    title = "?"
    suffixes: tuple[str, ...] = ()
    writable = False
    save_as: str | None = None
    save_note = ""  # for --format's help
    indexed = False
    fallback = False

    def sniff(self, path: Path) -> bool:
        """True when the file's content is this format's (cheap: magic bytes, a header, HDF5
        attributes; never the whole file). A file of the format that is clearly damaged may
        raise SnapshotError saying so."""
        raise NotImplementedError

    def damage(self, path: Path) -> SnapshotError | None:
        """The error of a file that starts like this format's but is damaged, asked when no
        format took the file, before a fallback (which might read it wrongly); None else."""
        return None

    def read(self, path: Path, index: int | None = None):
        """The Snapshot in `path` (of an indexed format: snapshot `index`, default the last)."""
        raise NotImplementedError

    def write(self, path: Path, contents: Contents, overwrite: bool = False) -> Path:
        """Write a run's state to `path` (its name already checked against `suffixes`)."""
        raise SnapshotError(f"{path}: galaxyview does not write {self.title} files")

    def companions(self, path: Path) -> list[Path]:
        """The files `write` may write beside `path`."""
        return []

    def cannot_write(self, units: UnitSystem | None) -> str | None:
        """Why a run in `units` (None: N-body units) cannot be written in this format; None
        when it can (asked before a run, not after it)."""
        return None

    @property
    def choice(self) -> str:
        """The name `--format` and `save(format=)` take."""
        return self.save_as or self.name
