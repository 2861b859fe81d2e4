"""Non-finite particle values: what is wrong (`non_finite`), raised by ParticleState.validate as
a NonFiniteError, which a file's reader turns into one that blames the file (a NaN or infinity
there means the file is damaged or was written by a run that blew up, not that the run in hand
went wrong)."""
from __future__ import annotations

import numpy as np

from galaxyview.errors import GalaxyviewError, SnapshotError


def non_finite(**arrays) -> str | None:
    """None when every one of `arrays` (pos=..., vel=...; a row a particle) is finite; else
    which holds NaN or infinite values, how many and where first."""
    for name, values in arrays.items():
        bad = ~np.isfinite(np.asarray(values))
        if bad.any():
            first = int(np.argwhere(bad)[0][0])
            return (f"{name} holds NaN or infinite values ({int(bad.sum())} entries, first at "
                    f"particle {first})")
    return None


class NonFiniteError(GalaxyviewError):
    """Particle values NaN or infinite; `what` says which and where."""

    def __init__(self, what: str):
        self.what = what
        super().__init__(f"{what}; the state is unusable: reload the scene or try a smaller "
                         f"time step")

    def in_file(self, where) -> SnapshotError:
        """The error for values read from `where` (the file, perhaps with the snapshot)."""
        return SnapshotError(f"{where}: {self.what}; the file is damaged, or was written by a "
                             f"run that blew up: load an earlier snapshot, or rerun with a "
                             f"smaller time step")
