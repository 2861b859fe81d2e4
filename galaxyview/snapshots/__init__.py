"""Reading every source a run can start from: scenes, galaxyview archives, Tipsy, Gadget and
what pynbody loads; writing galaxyview snapshots and Tipsy. docs/snapshot-format.md.

`read(path)` sniffs the file's content (not its name) and gives a `Snapshot`;
`load_source(source)` adds scene names and files for the commands and the Python API.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from galaxyview.errors import ParameterError, SnapshotError
from galaxyview.files import check_regular
from galaxyview.model import tipsy
from galaxyview.model.ics import from_file
from galaxyview.model.exact import ExactState
from galaxyview.model.params import Params
from galaxyview.model.scene import Scene, load_scene
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem
from galaxyview.snapshots import archive, foreign, gadget

SNAPSHOT_SUFFIXES = (*archive.SUFFIXES, *tipsy.SUFFIXES, ".gadget", ".dat")


@dataclass(repr=False)
class Snapshot:
    """One stored state and what its file says about the run.

    format: "galaxyview", "tipsy", "gadget-binary", "gadget-hdf5", "pynbody"; params: the
    parameters the file states (keys of Params; {} when it states none); units: its unit
    system or None (N-body units); exact: a galaxyview archive's exact engine state; archive:
    the open Archive when the file holds a time series (count > 1); index: which one this is."""

    state: ParticleState
    format: str
    source: Path
    params: dict = field(default_factory=dict)
    units: UnitSystem | None = None
    exact: ExactState | None = None
    archive: archive.Archive | None = None
    index: int = 0
    count: int = 1
    run: archive.RunInfo | None = None
    notes: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        of = f", snapshot {self.index} of {self.count}" if self.count > 1 else ""
        return (f"<Snapshot {self.source}: {self.format}, N = {self.state.n}, "
                f"t = {self.time:g}{of}>")

    @property
    def time(self) -> float:
        return self.state.time

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()


def accepted_formats() -> str:
    extra = ("and whatever pynbody loads" if foreign.available() else
             "and, with pynbody installed (pip install pynbody), whatever it loads")
    return ("galaxyview reads scene files (TOML, or a shipped scene's name), galaxyview "
            "snapshots and archives (HDF5), Tipsy (standard, ChaNGa, Bonsai), Gadget-2/3 "
            f"binary, Gadget-4 / AREPO / SWIFT HDF5, {extra}")


def read(path, index: int | None = None) -> Snapshot:
    """The snapshot in file `path` (for an archive: snapshot `index`, default the last)."""
    path = Path(path)
    if not path.exists():
        raise SnapshotError(f"{path}: no such file; check the path")
    if path.is_dir():
        raise SnapshotError(f"{path}: is a folder; give the path of a snapshot file")
    check_regular(path, SnapshotError, "snapshot")
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if index is not None and not head.startswith(archive.HDF5_SIGNATURE):
        raise SnapshotError(f"{path}: a snapshot index ({index}) applies to galaxyview "
                            "archives only")
    if head.startswith(archive.HDF5_SIGNATURE):
        return _read_hdf5(path, index)
    if tipsy.is_tipsy(path):
        state, found, units = tipsy.read_snapshot(path)
        return Snapshot(state, "tipsy", path, found, units,
                        notes={"flavour": state.meta.get("flavour", "standard"),
                               "precision": state.meta["precision"]})
    if gadget.binary_order(head) is not None:
        state, units, notes = gadget.read_binary(path)
        return Snapshot(state, "gadget-binary", path, {}, units, notes=notes)
    damaged = tipsy.damage(path)  # not for pynbody: it pads a short file with zeros
    if damaged is not None:
        raise damaged
    if foreign.available():
        return _read_foreign(path)
    raise SnapshotError(f"{path}: not a format galaxyview knows. {accepted_formats()}")


def _read_foreign(path: Path) -> Snapshot:
    try:
        state, units, notes = foreign.read(path)
    except SnapshotError as exc:
        raise SnapshotError(f"{exc}. {accepted_formats()}") from None
    return Snapshot(state, "pynbody", path, {}, units, notes=notes)


def _read_hdf5(path: Path, index: int | None) -> Snapshot:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            kind = ("galaxyview" if archive.is_archive(f, path) else
                    "gadget" if gadget.is_gadget_hdf5(f, path) else None)
            if kind == "gadget":
                if index is not None:
                    raise SnapshotError(f"{path}: a snapshot index ({index}) applies to "
                                        "galaxyview archives only")
                state, units, notes = gadget.read_hdf5(f, path)
                return Snapshot(state, "gadget-hdf5", path, {}, units, notes=notes)
    except (OSError, RuntimeError, KeyError) as exc:  # h5py's, where no guard named the object
        raise SnapshotError(f"{path}: an HDF5 file that cannot be read (truncated or "
                            f"corrupt: {exc})") from None
    if kind is None:
        if foreign.available():
            return _read_foreign(path)
        raise SnapshotError(f"{path}: an HDF5 file, but neither a galaxyview archive nor a "
                            f"Gadget / AREPO / SWIFT snapshot. {accepted_formats()}")
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
    snap = Snapshot(state, "galaxyview", path, asdict(exact.params), store.run.units, exact,
                    store if len(store) > 1 else None, i, len(store), store.run,
                    {"galaxyview_version": store.version})
    if snap.archive is None:
        store.close()
    return snap


def _looks_like_snapshot(path: Path) -> bool:
    if path.suffix.lower() in SNAPSHOT_SUFFIXES:
        return True
    if path.suffix.lower() == ".toml" or not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
        head.decode("utf-8")
    except UnicodeDecodeError:
        return True
    except OSError:
        return False
    return head.startswith(archive.HDF5_SIGNATURE) or gadget.binary_order(head) is not None


def load_source(source, n: int | None = None, backend: str = "cpu",
                index: int | None = None) -> tuple[ParticleState, Scene | None, Snapshot | None]:
    """(state, scene, None) for a scene name or file (n particles, the backend's default when
    None); (state, None, snapshot) for a snapshot or archive file (n must be None or match)."""
    scene, snap = open_source(source, n, index)
    return (scene.build(n, backend), scene, None) if snap is None else (snap.state, None, snap)


def open_source(source, n: int | None = None,
                index: int | None = None) -> tuple[Scene | None, Snapshot | None]:
    """(scene, None) for a Scene, a scene name or file, its particles not made yet; (None,
    snapshot) for a snapshot or archive file (n must be None or match)."""
    if isinstance(source, Scene):  # a scene already loaded (and perhaps changed)
        return source, None
    path = Path(source)
    if not _looks_like_snapshot(path):
        if index is not None:
            raise SnapshotError(f"{source}: a snapshot index ({index}) applies to archives, "
                                "not to scenes")
        return load_scene(source), None
    snap = read(path, index)
    if n is not None and n != snap.state.n:
        snap.close()
        raise ParameterError(f"{source} is a snapshot of {snap.state.n} particles; a particle "
                             f"count ({n}) applies to scenes only, leave it out")
    return None, snap


def _galaxy_file(path) -> tuple[ParticleState, UnitSystem | None]:
    """A scene's galaxy from a file (model/ics/from_file.py): its particles and units."""
    snap = read(path)
    snap.close()
    return snap.state, snap.units


from_file.set_loader(_galaxy_file)


def params_of(snap: Snapshot) -> Params:
    """The Params a snapshot states, the defaults for what it does not."""
    known = set(Params.__dataclass_fields__)
    return Params().with_(**{k: v for k, v in snap.params.items() if k in known})
