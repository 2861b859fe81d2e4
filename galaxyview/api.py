"""The Python API: `import galaxyview as gv; sim = gv.open("antennae", n=10**5)`.

docs/python-api.md describes it. Every argument is checked at the call; bad values raise
`galaxyview.GalaxyviewError` subclasses (ParameterError for numbers, SnapshotError for files)
with the same messages as the command line.
"""
from __future__ import annotations

from pathlib import Path

from galaxyview.errors import ParameterError
from galaxyview.model.units import UnitSystem
from galaxyview.simulation import (Simulation, api_errors, check_choices, flag, open_simulation,
                                   whole_count)
from galaxyview.snapshots import Snapshot, read


def open(source, backend: str = "auto", n=None, *, theta=None, dt=None, eps=None,
         gravity: str | None = None, device: int = 0, integrator: str | None = None,
         boundary: str | None = None, collision: str | None = None,
         index: int | None = None, playback: bool | None = None) -> Simulation:
    """A Simulation of `source`: a shipped scene's name, a scene file, a snapshot or archive.

    backend: "auto", "cpu", "reference" or "gpu"; n: particles (scenes only; 10**6 or 1e6);
    theta, dt, eps: numbers overriding the scene's or snapshot's (dt and eps may be quantities
    where it has physical units); index: which snapshot of an archive to
    start from (an archive of several plays back otherwise, unless playback=False)."""
    if not isinstance(source, (str, Path)):
        raise ParameterError(f"source must be a scene name or a path, got {source!r} (particles "
                             f"from arrays: galaxyview.Simulation.from_arrays)")
    device = check_choices(backend, gravity, device, integrator, boundary, collision)
    n = None if n is None else whole_count(n, "n")
    index = None if index is None else _index(index)
    if playback is not None:
        playback = flag(playback, "playback", "True, False or None (an archive of several "
                        "snapshots plays back unless False or an index is given)")
    with api_errors():
        return open_simulation(source, backend, n, theta, dt, eps, gravity, device, integrator,
                               boundary, collision, index, playback)


def load(path, index: int | None = None) -> Snapshot:
    """The Snapshot stored in `path` (any format galaxyview reads; an archive's snapshot
    `index`, default the last): .state (ParticleState), .params, .units, .time, .format."""
    if not isinstance(path, (str, Path)):
        raise ParameterError(f"path must be a file path, got {path!r}")
    index = None if index is None else _index(index)
    snap = read(path, index)
    snap.close()
    return snap


def _index(value) -> int:
    """A snapshot's position in an archive (negative from the end); ParameterError else."""
    try:
        return whole_count(value, "index", minimum=-2**62)
    except ParameterError:
        raise ParameterError(f"index must be a whole number (a snapshot's position; negative "
                             f"counts from the end), got {value!r}") from None


__all__ = ["Simulation", "Snapshot", "UnitSystem", "load", "open"]
