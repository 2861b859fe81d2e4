"""galaxyview's own HDF5 format: one snapshot or an archive of several (snapshots/archive.py)."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from galaxyview.errors import SnapshotError
from galaxyview.snapshots import archive, hdf5
from galaxyview.snapshots.format import Contents, Format
from galaxyview.snapshots.snapshot import Snapshot


class Galaxyview(Format):
    name = "galaxyview"
    title = "galaxyview snapshots and archives (HDF5)"
    suffixes = archive.SUFFIXES
    writable = indexed = True
    save_note = "an exact snapshot that restarts bit for bit"

    def sniff(self, path: Path) -> bool:
        return hdf5.sniff(path, archive.is_archive)

    def read(self, path: Path, index: int | None = None) -> Snapshot:
        store = archive.Archive(path)
        try:
            if not len(store):
                raise SnapshotError(f"{path}: the archive holds no snapshots (its run stopped "
                                    "before the first was written)")
            i = len(store) - 1 if index is None else index
            exact = store[i]
        except BaseException:
            store.close()
            raise
        i %= len(store)
        state = exact.state
        state.meta.update(scene=store.run.name or path.stem, source=str(path))
        snap = Snapshot(state, self.name, path, asdict(exact.params), store.run.units, exact,
                        store if len(store) > 1 else None, i, len(store), store.run,
                        {"galaxyview_version": store.version})
        if snap.archive is None:
            store.close()
        return snap

    def write(self, path: Path, contents: Contents, overwrite: bool = False) -> Path:
        return archive.save_exact(path, contents.exact(), contents.run(), overwrite)
