"""Gadget-4 and AREPO HDF5 snapshots (snapshots/gadget.py); written by snapshots/export.py for
pynbody and yt."""
from __future__ import annotations

from pathlib import Path

from galaxyview.model.units import UnitSystem
from galaxyview.snapshots import export, gadget, hdf5
from galaxyview.snapshots.format import Contents, Format
from galaxyview.snapshots.snapshot import Snapshot


class Gadget4(Format):
    name = "gadget-hdf5"
    title = "Gadget-4 / AREPO HDF5"
    suffixes = export.SUFFIXES
    writable = True
    save_as = export.FORMAT
    save_note = ("a Gadget-4 HDF5 snapshot that pynbody and yt open, in kpc, 1e10 Msun, km/s "
                 "(scenes with [units])")

    def sniff(self, path: Path) -> bool:
        return hdf5.sniff(path, lambda f, p: gadget.is_gadget_hdf5(f, p)
                          and not gadget.is_swift(f, p))

    def read(self, path: Path, index: int | None = None) -> Snapshot:
        with hdf5.opened(path) as f:
            state, units, notes = gadget.read_hdf5(f, path)
        return Snapshot(state, self.name, path, {}, units, notes=notes)

    def write(self, path: Path, contents: Contents, overwrite: bool = False) -> Path:
        return export.write_gadget4(path, contents.state(), contents.units, overwrite)

    def cannot_write(self, units: UnitSystem | None) -> str | None:
        if units is None:
            return ("has no physical unit system (N-body units, or SI), so the snapshot's kpc, "
                    "Msun and km/s cannot be given; give the scene [units], or write another "
                    "format")
        return None
