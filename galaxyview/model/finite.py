"""Particle values read from a file must be finite: a NaN or infinity there means the file is
damaged or was written by a run that blew up, not that the run in hand went wrong."""
from __future__ import annotations

import numpy as np

from galaxyview.errors import SnapshotError


def check_finite(where, **arrays) -> None:
    """SnapshotError naming `where` (the file, perhaps with the snapshot in it) when one of
    `arrays` (pos=..., vel=..., mass=...; one row per particle) holds NaN or infinite values."""
    for name, values in arrays.items():
        bad = ~np.isfinite(np.asarray(values))
        if bad.any():
            first = int(np.argwhere(bad)[0][0])
            raise SnapshotError(
                f"{where}: {name} holds NaN or infinite values ({int(bad.sum())} entries, "
                f"first at particle {first}); the file is damaged, or was written by a run "
                f"that blew up: load an earlier snapshot, or rerun with a smaller time step")
