"""Block time steps (Aarseth 1985; Makino 1991): every particle steps with dt / 2^k, k its level
(dt: the largest step, params.dt), so that particles fall into few blocks that share times.

Time inside one engine step is counted in integer ticks of dt / 2^L (L = params.block_levels):
a level-k step is 2^(L-k) ticks, and all particles meet again after 2^L ticks, where the engine
step ends. A particle's time is always a multiple of its step, so the particles due at the next
block time t are exactly those whose step divides t: the levels k >= L - trailing_zeros(t).
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.base import TimeSteps


def next_block(t: int, counts: np.ndarray, L: int) -> tuple[int, int]:
    """(next block time in ticks, lowest active level) after time t, for `counts[k]` particles
    on level k."""
    t_next = min((t // d + 1) * d for d in (1 << (L - int(k)) for k in np.flatnonzero(counts)))
    zeros = (t_next & -t_next).bit_length() - 1  # trailing zero bits of t_next
    return t_next, max(0, L - zeros)


def initial_levels(dt0: np.ndarray, dt: float, L: int) -> np.ndarray:
    """The levels whose steps dt / 2^k are the largest not above dt0 (clipped to 0..L)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.ceil(np.log2(dt / dt0))
    k = np.where(np.isfinite(k), k, np.where(dt0 > 0, 0, L))  # no jerk: the largest step
    return np.clip(k, 0, L).astype(np.int32)


def new_levels(level: np.ndarray, crit: np.ndarray, h: np.ndarray, t: int, L: int) -> np.ndarray:
    """Levels after a step of size h ending at tick t, for the criterion's steps `crit`:
    halved (as often as needed) when crit < h, doubled when crit >= 2h and t allows it
    (a multiple of the doubled step), otherwise kept; always within 0..L."""
    with np.errstate(divide="ignore", invalid="ignore"):
        finer = np.ceil(np.log2(h / crit))
    finer = np.where(np.isfinite(finer), finer, np.where(crit > 0, 0, L))
    out = level + np.clip(finer, 0, L).astype(np.int32)
    can_double = (level > 0) & (crit >= 2 * h) & (t % (np.int64(1) << (L - level + 1)) == 0)
    out = np.where(can_double, level - 1, out)
    return np.clip(out, 0, L).astype(np.int32)


def level_shift(dt_old: float, dt_new: float) -> int:
    """Levels to add when the largest step goes from dt_old to dt_new, so no step grows."""
    return int(np.ceil(np.log2(dt_new / dt_old) - 1e-12))


def rescale_levels(level: np.ndarray, dt_old: float, dt_new: float, L: int) -> np.ndarray:
    """Levels for a new largest step dt_new, so that no particle's step grows."""
    return np.clip(level + level_shift(dt_old, dt_new), 0, L).astype(np.int32)


class Activity:
    """Counts block steps and active particles over one engine step, for TimeSteps."""

    def __init__(self):
        self.blocks, self.active = 0, 0

    def add(self, n_active: int) -> None:
        self.blocks += 1
        self.active += n_active

    def time_steps(self, counts: np.ndarray) -> TimeSteps:
        """TimeSteps for `counts[k]` particles on level k."""
        n = int(counts.sum())
        frac = self.active / (self.blocks * n) if self.blocks and n else 1.0
        return TimeSteps(np.array(counts, np.int64), self.blocks, frac)
