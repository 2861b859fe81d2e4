"""The value each particle is coloured by (the vertex's a_value) and the colour map's range.

Speed, potential and energy come from the engine's state and accelerations (on the GPU engine
kernels/render_pack.cu computes them, and the mass, on the device: DEVICE_VALUES); the galaxy of
origin and the local density from the tree (model/density.py) are computed on the host.
"""
from __future__ import annotations

import numpy as np

from galaxyview.light.kernel import NEEDS_POTENTIAL, particle_values
from galaxyview.model.density import tree_density
from galaxyview.render.look import mode_code

LABELS = {"speed": "speed", "potential": "potential φ", "energy": "binding energy v²/2 + φ",
          "density": "log10 density", "galaxy": "galaxy of origin", "component": "component",
          "population": "stellar population",
          "mass": "log10 mass", "vz": "vertical velocity", "z": "height z"}


def host_values(mode: str, state, pot: np.ndarray | None = None) -> np.ndarray:
    """(N,) float32 value of each particle for `mode` from a ParticleState (and the potential
    for 'potential' and 'energy'); the speed for 'component', which does not use it (as
    render_pack.cu writes it)."""
    if mode == "density":
        return np.log10(np.maximum(tree_density(state.pos, state.mass), 1e-30)).astype(np.float32)
    return particle_values(mode, state.pos, state.vel, state.mass, state.galaxy, pot)


def engine_values(engine, mode: str, state=None, count: int | None = None) -> np.ndarray:
    """The values the engine makes itself (Engine.colour_values), else host_values of its
    current state (host copies; the engine must be idle); `state`: that state when the caller
    has already copied it. With `count` (for a colour map's range) about that many: of a
    sample of the state (Engine.sample_state) where the mode needs neither the potential nor
    the neighbours (the density)."""
    made = engine.colour_values(mode, count)
    if made is not None:
        return made
    if state is None and count is not None and mode not in NEEDS_POTENTIAL + ("density",):
        return host_values(mode, engine.sample_state(count)[1])
    pot = engine.accelerations()[1] if mode in NEEDS_POTENTIAL else None
    return host_values(mode, engine.state() if state is None else state, pot)


def auto_range(mode: str, values: np.ndarray) -> tuple[float, float]:
    """The colour map's (lo, hi) for these values: 0 to the 99th percentile for speed, the
    1st to 99th percentile otherwise; galaxies 0..max."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return 0.0, 1.0
    if len(v) > 200_000:
        v = v[:: len(v) // 200_000]
    if mode_code(mode) != 2:
        return 0.0, max(float(v.max()), 1.0)
    lo = 0.0 if mode == "speed" else float(np.percentile(v, 1))
    hi = float(np.percentile(v, 99))
    if mode in ("vz", "z"):  # symmetric about 0: up and down alike
        hi = max(abs(lo), abs(hi))
        lo = -hi
    if not hi > lo:
        hi = lo + max(abs(lo), 1.0) * 1e-3
    return lo, hi
