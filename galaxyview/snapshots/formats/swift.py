"""SWIFT HDF5 snapshots: the Gadget layout with SWIFT's /Units (snapshots/gadget.py)."""
from __future__ import annotations

from pathlib import Path

from galaxyview.snapshots import gadget, hdf5
from galaxyview.snapshots.format import Format
from galaxyview.snapshots.snapshot import Snapshot


class Swift(Format):
    name = "swift"
    title = "SWIFT HDF5"
    suffixes = (".hdf5",)

    def sniff(self, path: Path) -> bool:
        return hdf5.sniff(path, gadget.is_swift)

    def read(self, path: Path, index: int | None = None) -> Snapshot:
        with hdf5.opened(path) as f:
            state, units, notes = gadget.read_hdf5(f, path)
        return Snapshot(state, self.name, path, {}, units, notes=notes)
