"""Reading every source a run can start from: scenes and the snapshot formats of
snapshots/registry.py (galaxyview archives, Gadget, SWIFT, Tipsy, what pynbody loads); writing
them where a format can. docs/snapshot-format.md.

`read(path)` sniffs the file's content (not its name) and gives a `Snapshot`;
`load_source(source)` adds scene names and files for the commands and the Python API.
"""
from __future__ import annotations

from pathlib import Path

from galaxyview.errors import ParameterError, SnapshotError
from galaxyview.model.ics import from_file
from galaxyview.model.params import Params
from galaxyview.model.scene import Scene, load_scene
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem
from galaxyview.snapshots.registry import FORMATS, accepted_formats, looks_like_snapshot, read
from galaxyview.snapshots.snapshot import Snapshot

__all__ = ["FORMATS", "Snapshot", "accepted_formats", "load_source", "open_source",
           "params_of", "read"]


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
    if not looks_like_snapshot(path):
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
