"""What reading a snapshot file gives: the state and what the file says about the run."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from galaxyview.model.exact import ExactState
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem
from galaxyview.snapshots import archive


@dataclass(repr=False)
class Snapshot:
    """One stored state and what its file says about the run.

    format: the registry's name of the file's format ("galaxyview", "tipsy", "gadget-binary",
    "gadget-hdf5", "swift", "pynbody", ...); params: the parameters the file states (keys of
    Params; {} when it states none); units: its unit system or None (N-body units); exact: a
    galaxyview archive's exact engine state; archive: the open Archive when the file holds a
    time series (count > 1); index: which one this is."""

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
