"""galaxyview's own snapshot and archive format, on HDF5 (docs/snapshot-format.md).

One file holds one snapshot or a time series of them (an archive, like REBOUND's simulation
archive). Root attributes: format = "galaxyview-archive", format_version, galaxyview_version.
Group /run: how the run was made (attributes name, engine, device, gravity, units; the scene
file's text as the dataset `scene_toml`). Group /snapshots/NNNNNN, one per stored state:
attributes time, steps, params (JSON), engine kind, gravity, kinetic and potential energy;
datasets pos, vel (N, 3) float32, mass, radius float32, component uint8, galaxy int16, ids
uint64, acc (N, 3) and pot float32; `exact/` pos, vel, acc, pot in the engine's float64 where
it has them; `integrator/` the integrator's saved state (arrays as datasets, scalars as
attributes). The first snapshot goes to a temporary file renamed into place. A later one is
written under /writing, marked `complete` and moved into /snapshots as the last act, then
flushed, with Ctrl-C held meanwhile: a snapshot is complete or absent, and a crash loses at most
the interval being computed. Readers skip an incomplete last snapshot (one without the mark in
an archive whose root says `complete_marks`, or one missing datasets in an older archive) with
a warning.
"""
from __future__ import annotations

import dataclasses
import datetime
import errno
import json
import logging
import os
from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.files import check_free_space, check_output_path, temp_beside
from galaxyview.interrupt import held
from galaxyview.model import diagnostics
from galaxyview.model.exact import ExactState
from galaxyview.model.finite import NonFiniteError, non_finite
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem
from galaxyview.snapshots import hdf5, hdf5_units
from galaxyview.version import __version__

FORMAT = "galaxyview-archive"
FORMAT_VERSION = 1
SUFFIXES = (".h5", ".hdf5", ".gva")
BYTES_PER_PARTICLE = 4 * (3 + 3 + 1 + 1 + 3 + 1) + 1 + 2 + 8 + 8 * (3 + 3 + 3 + 1)
WRITING = "writing"  # where an appended snapshot is built before its move into /snapshots
log = logging.getLogger(__name__)


def _h5py():
    try:
        import h5py
    except ImportError:  # a runtime dependency; say how to get it back
        raise SnapshotError("HDF5 snapshots need h5py: pip install h5py") from None
    return h5py


def snapshot_bytes(n: int, float64: bool = True) -> int:
    """About the bytes one snapshot of n particles takes (metadata aside)."""
    return n * (BYTES_PER_PARTICLE if float64 else BYTES_PER_PARTICLE - 80) + 16384


def _disk_error(path: Path, exc: BaseException, what: str) -> SnapshotError:
    text = str(exc)
    full = getattr(exc, "errno", None) == errno.ENOSPC or "errno = 28" in text or \
        "No space left" in text
    if full:
        return SnapshotError(f"{path}: the disk is full: {what} failed; free some space or "
                             f"write elsewhere")
    if getattr(exc, "errno", None) in (errno.EROFS, errno.EACCES, errno.EPERM):
        return SnapshotError(f"{path}: {what} failed: the folder {path.parent} is not writable "
                             f"({exc.strerror}); choose a folder you can write to")
    return SnapshotError(f"{path}: {what} failed ({getattr(exc, 'strerror', None) or text})")


# -- writing ------------------------------------------------------------------------------------
@dataclasses.dataclass
class RunInfo:
    """What /run records: the run's name, engine, device, gravity, units, scene text."""

    name: str = ""
    engine: str = ""
    device: str = ""
    gravity: str = "tree"
    units: UnitSystem | None = None
    scene_toml: str | None = None


class ArchiveWriter:
    """Appends ExactStates to a new archive file; each append is complete or absent.

    The first snapshot is built in memory and written as plain bytes to a temporary file
    beside `path`, renamed into place when complete: a failed first write leaves no file.
    A later one is written under /writing, marked complete, moved into /snapshots and flushed,
    after a check that the disk has room for it (HDF5 itself does not recover from a full
    disk); Ctrl-C waits until the append is done, and a failure removes the half-written
    group, so the archive keeps the snapshots written before."""

    def __init__(self, path, run: RunInfo, overwrite: bool = False):
        self.path = check_output_path(path, overwrite, SnapshotError,
                                      "pass overwrite=True to replace it")
        self.run, self.count = run, 0
        self._file = self._cgs = None

    def append(self, exact: ExactState) -> None:
        """Write one snapshot and flush; SnapshotError (disk full, ...) leaves the archive
        with the snapshots written before."""
        with held():  # a Ctrl-C meanwhile comes after it, with the count right
            if self._file is None:
                self._first(exact)
            else:
                self._append(exact)
            self.count += 1

    def _append(self, exact: ExactState) -> None:
        try:
            check_free_space(self.path, snapshot_bytes(exact.state.n), f"snapshot {self.count}",
                             SnapshotError)
        except SnapshotError as exc:
            raise SnapshotError(f"the disk is full: {exc}; the archive keeps its "
                                f"{self.count} snapshots") from None
        f, name = self._file, f"{self.count:06d}"
        try:
            self._discard(name)  # a group left by an append that failed before
            group = f.require_group(WRITING).create_group(name)
            _write_snapshot(group, exact, self._cgs)
            group.attrs["complete"] = True
            f.move(f"{WRITING}/{name}", f"snapshots/{name}")
            f.flush()
        except BaseException as exc:
            self._discard(name)
            if isinstance(exc, (OSError, RuntimeError, ValueError)):
                raise _disk_error(self.path, exc, f"writing snapshot {self.count}") from None
            raise

    def _discard(self, name: str) -> None:
        """Remove snapshot `name` (being written, or moved but not flushed), if there."""
        for where in (f"{WRITING}/{name}", f"snapshots/{name}"):
            try:
                if where in self._file:
                    del self._file[where]
            except (OSError, RuntimeError, KeyError):
                pass  # (a failing disk: the reader skips an unmarked snapshot)

    def _first(self, exact: ExactState) -> None:
        h5py = _h5py()
        with h5py.File(f"{self.path.name}-in-memory", "w", driver="core",
                       backing_store=False) as f:
            self._header(f, exact.params.G)
            group = f.create_group("snapshots").create_group("000000")
            _write_snapshot(group, exact, self._cgs)
            group.attrs["complete"] = True
            f.flush()
            image = f.id.get_file_image()
        try:
            with temp_beside(self.path, ".tmp") as (tmp, out):
                out.write(image)
                out.close()
                os.replace(tmp, self.path)
        except OSError as exc:
            raise _disk_error(self.path, exc, "writing its first snapshot") from None
        try:
            self._file = h5py.File(self.path, "a")
        except OSError as exc:
            raise _disk_error(self.path, exc, "opening the archive to append") from None

    def _header(self, f, G: float) -> None:
        self._cgs = hdf5_units.cgs_units(self.run.units, G)
        hdf5_units.write_units_group(f, self._cgs)
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["galaxyview_version"] = __version__
        f.attrs["created"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        f.attrs["complete_marks"] = True  # every complete snapshot says so (attribute complete)
        run = f.create_group("run")
        r = self.run
        for key in ("name", "engine", "device", "gravity"):
            run.attrs[key] = getattr(r, key) or ""
        if r.units is not None:
            run.attrs["length_kpc"] = r.units.length_kpc
            run.attrs["mass_msun"] = r.units.mass_msun
        if r.scene_toml:
            run.create_dataset("scene_toml", data=r.scene_toml)

    def close(self) -> None:
        if self._file is None:
            return
        try:
            self._file.close()
        except (OSError, RuntimeError) as exc:
            raise _disk_error(self.path, exc, "closing the archive") from None
        finally:
            self._file = None


def _write_snapshot(group, exact: ExactState, cgs=None) -> None:
    """One snapshot into `group`, each dataset with its units (hdf5_units; `cgs`: the run's
    length, mass and velocity units in cgs, None in N-body units)."""
    s = exact.state
    a = group.attrs
    a["time"] = float(s.time)
    a["steps"] = int(exact.steps)
    a["params"] = json.dumps(dataclasses.asdict(exact.params))
    a["engine"] = exact.kind
    a["gravity"] = exact.gravity
    data = {"pos": s.pos, "vel": s.vel, "mass": s.mass, "radius": s.radius,
            "component": s.component, "galaxy": s.galaxy,
            "ids": np.arange(s.n, dtype=np.uint64)}
    if exact.acc is not None and exact.pot is not None:
        data["acc"] = np.asarray(exact.acc, np.float32)
        data["pot"] = np.asarray(exact.pot, np.float32)
        a["kinetic"] = diagnostics.kinetic_energy(exact.vel, s.mass)
        a["potential"] = diagnostics.potential_energy(s.mass, exact.pot)
    for key, value in data.items():
        hdf5_units.annotate(group.create_dataset(key, data=value), key, cgs)
    group["component"].attrs["names"] = hdf5_units.names(hdf5_units.COMPONENT_NAMES)
    galaxies = s.meta.get("galaxies")
    if galaxies:
        group["galaxy"].attrs["names"] = hdf5_units.names(galaxies)
    wide = {k: getattr(exact, k) for k in ("pos", "vel", "acc", "pot")
            if getattr(exact, k) is not None and getattr(exact, k).dtype == np.float64}
    if wide:
        g = group.create_group("exact")
        for key, value in wide.items():
            hdf5_units.annotate(g.create_dataset(key, data=value), key, cgs,
                                f"{hdf5_units.FIELDS[key][1]}: the engine's float64 values")
    g = group.create_group("integrator")
    for key, value in exact.integrator.items():
        if isinstance(value, np.ndarray):
            g.create_dataset(key, data=value)
        elif isinstance(value, (bool, int, float, str, np.generic)):
            g.attrs[key] = value
        else:
            raise SnapshotError(f"the integrator's saved {key!r} is a {type(value).__name__}; "
                                "save() gives numpy arrays and scalars only")


def save_exact(path, exact: ExactState, run: RunInfo, overwrite: bool = False) -> Path:
    """One snapshot in a new file (an archive of one)."""
    writer = ArchiveWriter(path, run, overwrite)
    writer.append(exact)
    writer.close()
    return writer.path


# -- reading ------------------------------------------------------------------------------------
def is_archive(f, path) -> bool:
    """The open h5py File `f` is a galaxyview archive (its `format` attribute says so)."""
    return _text(hdf5.attr(f, "format", path, None)) == FORMAT


def _text(value) -> str | None:
    """A string attribute's text (None for any other value)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


class Archive:
    """A galaxyview archive opened for reading: len() snapshots, archive[i] an ExactState
    (read on demand; negative i from the end), `run` the RunInfo."""

    def __init__(self, path):
        self.path = Path(path)
        h5py = _h5py()
        try:
            self._file = h5py.File(self.path, "r")
        except FileNotFoundError:
            raise SnapshotError(f"{self.path}: no such file; check the path") from None
        except OSError as exc:
            raise SnapshotError(f"{self.path}: not a readable HDF5 file (truncated or corrupt: "
                                f"{exc})") from None
        try:
            self._read_run(self._file)
        except BaseException:
            self.close()
            raise

    def _read_run(self, f) -> None:
        """The archive's version, snapshot names and RunInfo, every value checked."""
        path = self.path
        if not is_archive(f, path):
            raise SnapshotError(f"{path}: an HDF5 file but not a galaxyview archive")
        version = hdf5.number(f, "format_version", path, 0)
        if version > FORMAT_VERSION:
            raise SnapshotError(f"{path}: archive format {version:g} is newer than this "
                                f"galaxyview reads ({FORMAT_VERSION}); update galaxyview")
        snapshots = hdf5.get(f, "snapshots", path)
        self._names = sorted(hdf5.names(snapshots, path)) if snapshots is not None else []
        if self._names and not _complete(f, self._names[-1]):
            log.warning("%s: its last snapshot (%s) is incomplete: the run writing it was "
                        "stopped in the middle; it is skipped, the archive holds %d", self.path,
                        self._names[-1], len(self._names) - 1)
            self._names.pop()
        run = hdf5.get(f, "run", path)
        units = None
        if hdf5.attr(run, "length_kpc", path, None) is not None:
            units = UnitSystem(hdf5.number(run, "length_kpc", path, positive=True),
                               hdf5.number(run, "mass_msun", path, positive=True))
        toml = None
        if hdf5.has(run, "scene_toml", path):
            toml = hdf5.array(run, "scene_toml", path, numeric=False, any_shape=True)
            toml = toml.item() if isinstance(toml, np.ndarray) and toml.size == 1 else toml
            try:
                toml = toml.decode("utf-8") if isinstance(toml, bytes) else toml
            except UnicodeDecodeError:
                raise SnapshotError(f"{path}: dataset /run/scene_toml is not UTF-8 text; the "
                                    f"file is damaged") from None
            if not isinstance(toml, str):
                raise SnapshotError(f"{path}: dataset /run/scene_toml holds {toml!r}, not the "
                                    f"scene's text; the file is damaged")

        def text(key, default=""):
            value = _text(hdf5.attr(run, key, path, default) if run is not None else default)
            if value is None:
                raise SnapshotError(f"{path}: attribute {key!r} of /run is not text; the file "
                                    f"is damaged")
            return value

        self.run = RunInfo(text("name"), text("engine"), text("device"), text("gravity", "tree"),
                           units, toml)
        self.version = _text(hdf5.attr(f, "galaxyview_version", path, "?")) or "?"

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, index: int) -> ExactState:
        count = len(self._names)
        if not -count <= index < count:
            raise SnapshotError(f"{self.path}: snapshot {index} does not exist; the archive "
                                f"holds {count}" + (f" (0..{count - 1})" if count else ""))
        name = self._names[index]
        try:
            return _read_snapshot(self._file["snapshots"][name], self.path)
        except NonFiniteError as exc:
            raise exc.in_file(f"{self.path}: snapshot {name}") from None
        except GalaxyviewError as exc:  # a value ParticleState or Params refuses
            raise SnapshotError(f"{self.path}: snapshot {name}: {exc}") from None
        except hdf5.ERRORS as exc:
            raise SnapshotError(f"{self.path}: snapshot {name} is incomplete or corrupt "
                                f"({exc})") from None

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def times(self) -> np.ndarray:
        try:
            group = self._file["snapshots"]
            return np.array([hdf5.number(group[k], "time", self.path) for k in self._names])
        except hdf5.ERRORS as exc:
            raise hdf5.damaged(self.path, "/snapshots", exc) from None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# what an older writer (no complete marks) wrote last into a snapshot; one without them was cut
_LAST_WRITTEN = ("pos", "vel", "mass", "radius", "component", "galaxy", "ids", "integrator")


def _complete(f, name: str) -> bool:
    """Snapshot `name` was written to the end: marked complete, or (an archive from before the
    marks) holding every dataset the writer made, acc and pot where it has energies."""
    try:
        g = f["snapshots"][name]
        if not isinstance(g, _h5py().Group):
            return True
        if f.attrs.get("complete_marks", False):
            return bool(g.attrs.get("complete", False))
        return all(k in g for k in _LAST_WRITTEN) and (
            "kinetic" not in g.attrs or ("acc" in g and "pot" in g))
    except (TypeError, KeyError, ValueError, OSError):  # damaged, not cut: reading says so
        return True


def _read_snapshot(g, path) -> ExactState:
    a = g.attrs
    raw = json.loads(_text(hdf5.attr(g, "params", path)) or "null")
    if not isinstance(raw, dict):
        raise SnapshotError(f"attribute 'params' of {g.name} holds {raw!r}, not a JSON object "
                            f"of parameters")
    known = {f.name for f in dataclasses.fields(Params)}
    params = Params(**{k: v for k, v in raw.items() if k in known})
    mass = hdf5.array(g, "mass", path)
    n = len(mass)

    def read(group, key, width=None, need=False):
        if not hdf5.has(group, key, path):
            if need:
                raise SnapshotError(f"dataset {group.name}/{key} is missing")
            return None
        return hdf5.array(group, key, path, width=width, rows=n)

    state = ParticleState(read(g, "pos", 3, True), read(g, "vel", 3, True), mass,
                          read(g, "component", need=True), read(g, "galaxy", need=True),
                          hdf5.number(g, "time", path), radius=read(g, "radius", need=True))
    names = hdf5.attr(hdf5.get(g, "galaxy", path), "names", path, None)
    if names is not None:
        state.meta["galaxies"] = hdf5_units.read_names(names)
    exact = hdf5.get(g, "exact", path) if hdf5.has(g, "exact", path) else None
    wide = {k: read(exact, k, None if k == "pot" else 3) for k in ("pos", "vel", "acc", "pot")}
    what = non_finite(**{f"exact/{k}": v for k, v in wide.items() if v is not None})
    if what:
        raise NonFiniteError(what)
    acc = wide["acc"] if wide["acc"] is not None else read(g, "acc", 3)
    pot = wide["pot"] if wide["pot"] is not None else read(g, "pot")
    group = hdf5.get(g, "integrator", path)
    saved = {k: hdf5.array(group, k, path, numeric=False, any_shape=True)
             for k in hdf5.names(group, path)} if group is not None else {}
    if group is not None:
        saved.update({k: (v.item() if isinstance(v, np.generic) else v)
                      for k, v in group.attrs.items()})
    steps = hdf5.number(g, "steps", path, 0)
    return ExactState(state, _text(a.get("engine", "file")) or "file",
                      _text(a.get("gravity", "tree")) or "tree", params, wide["pos"],
                      wide["vel"], acc, pot, int(steps), saved)
