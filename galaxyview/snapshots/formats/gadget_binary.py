"""Gadget-2/3 binary snapshots, SnapFormat 1 and 2 (snapshots/gadget.py)."""
from __future__ import annotations

from pathlib import Path

from galaxyview.snapshots import gadget
from galaxyview.snapshots.format import Format
from galaxyview.snapshots.snapshot import Snapshot


class GadgetBinary(Format):
    name = "gadget-binary"
    title = "Gadget-2/3 binary"
    suffixes = (".gadget", ".dat")

    def sniff(self, path: Path) -> bool:
        try:
            with open(path, "rb") as f:
                return gadget.binary_order(f.read(16)) is not None
        except OSError:
            return False

    def read(self, path: Path, index: int | None = None) -> Snapshot:
        state, units, notes = gadget.read_binary(path)
        return Snapshot(state, self.name, path, {}, units, notes=notes)
