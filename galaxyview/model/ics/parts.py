"""Initial conditions made in parts: a model whose particles are drawn independently, made
as any range [start, start + count) of its n particles alone, the same particles whatever
the ranges. A distributed engine makes each process's share where it runs (a billion
particles are never on one host at once); `whole` makes them all on one.

Each CHUNK of particles has its own random stream (seeded by (seed, chunk)); the parts are
not centred, their sums (`moments`) centre them on the centre of mass at rest (`centred`).
"""
from __future__ import annotations

import numpy as np

from galaxyview.model.state import ParticleState

CHUNK = 1 << 20  # particles of one random stream


class PartMaker:
    """n particles drawn chunk by chunk; subclasses give `n`, `seed` and `_chunk`."""

    n: int
    seed: int

    def _chunk(self, count: int, rng: np.random.Generator) -> ParticleState:
        """`count` particles drawn with rng (not centred)."""
        raise NotImplementedError

    def part(self, start: int, count: int) -> ParticleState:
        """Particles [start, start + count) of the n, not centred."""
        if not 0 <= start <= start + count <= self.n:
            raise ValueError(f"particles [{start}, {start + count}) are not in [0, {self.n})")
        first, last = start // CHUNK, -(-(start + count) // CHUNK)
        pieces = []
        for c in range(first, last):
            size = min(CHUNK, self.n - c * CHUNK)
            piece = self._chunk(size, np.random.default_rng([self.seed, c]))
            a, b = max(start - c * CHUNK, 0), min(start + count - c * CHUNK, size)
            pieces.append(piece.take(slice(a, b)) if (a, b) != (0, size) else piece)
        return pieces[0] if len(pieces) == 1 else ParticleState.concatenate(pieces)

    def whole(self) -> ParticleState:
        """All n particles, centred."""
        state = self.part(0, self.n)
        return centred(state, moments(state))


def moments(state: ParticleState) -> np.ndarray:
    """(7,) float64: the mass, the mass-weighted sums of positions and velocities (summed
    over the parts, they give the centre of mass and its velocity)."""
    m = state.mass.astype(np.float64)
    return np.r_[m.sum(), m @ state.pos.astype(np.float64), m @ state.vel.astype(np.float64)]


def centred(state: ParticleState, total: np.ndarray) -> ParticleState:
    """`state` moved by the centre of mass and its velocity of `total` (moments summed)."""
    mass = max(float(total[0]), 1e-300)
    state.pos -= (total[1:4] / mass).astype(np.float32)
    state.vel -= (total[4:7] / mass).astype(np.float32)
    return state
