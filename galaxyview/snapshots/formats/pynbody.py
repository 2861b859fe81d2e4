"""Whatever pynbody loads, when it is installed (snapshots/foreign.py): the fallback, asked
after every other format has refused a file."""
from __future__ import annotations

from pathlib import Path

from galaxyview.errors import SnapshotError
from galaxyview.snapshots import foreign
from galaxyview.snapshots.format import Format
from galaxyview.snapshots.snapshot import Snapshot


class Pynbody(Format):
    name = "pynbody"
    fallback = True

    @property
    def title(self) -> str:
        return ("whatever pynbody loads" if foreign.available() else
                "with pynbody installed (pip install pynbody), whatever it loads")

    def sniff(self, path: Path) -> bool:
        return foreign.available()

    def read(self, path: Path, index: int | None = None) -> Snapshot:
        from galaxyview.snapshots.registry import accepted_formats

        try:
            state, units, notes = foreign.read(path)
        except SnapshotError as exc:
            raise SnapshotError(f"{exc}. {accepted_formats()}") from None
        return Snapshot(state, self.name, path, {}, units, notes=notes)
