"""Tipsy snapshots (standard, ChaNGa, Bonsai) with their companion files (snapshots/tipsy.py)."""
from __future__ import annotations

from pathlib import Path

from galaxyview.errors import SnapshotError
from galaxyview.snapshots import tipsy
from galaxyview.snapshots.format import Contents, Format
from galaxyview.snapshots.snapshot import Snapshot


class Tipsy(Format):
    name = "tipsy"
    title = "Tipsy (standard, ChaNGa, Bonsai)"
    suffixes = tipsy.SUFFIXES
    writable = True
    save_note = "Tipsy with its companion files"

    def sniff(self, path: Path) -> bool:
        return tipsy.is_tipsy(path)

    def damage(self, path: Path) -> SnapshotError | None:
        return tipsy.damage(path)

    def read(self, path: Path, index: int | None = None) -> Snapshot:
        state, found, units = tipsy.read_snapshot(path)
        return Snapshot(state, self.name, path, found, units,
                        notes={"flavour": state.meta.get("flavour", "standard"),
                               "precision": state.meta["precision"]})

    def write(self, path: Path, contents: Contents, overwrite: bool = False) -> Path:
        potential = contents.potential()
        return tipsy.save_state(path, contents.state(), contents.params, potential,
                                units=contents.units, overwrite=overwrite)

    def companions(self, path: Path) -> list[Path]:
        return tipsy.companion_paths(path)
