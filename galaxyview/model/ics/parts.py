"""Initial conditions made in parts: a model whose particles are drawn independently, made
as any range [start, start + count) of its n particles alone, the same particles whatever
the ranges. A distributed engine makes each process's share where it runs (a billion
particles are never on one host at once); `whole` makes them all on one.

A model is a list of blocks (a galaxy's disk, bulge, halo, ...), each drawn CHUNK particles
at a time from its own random stream (seeded by the seed, the block's key and the chunk).
The parts are not centred; their sums (`moments`) centre them on the centre of mass at
rest (`centred`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from galaxyview.model.state import ParticleState

CHUNK = 1 << 20  # particles of one random stream


@dataclass(frozen=True)
class Block:
    """`size` particles that draw(count, rng) makes `count` at a time (not centred)."""

    size: int
    key: tuple  # with the seed and the chunk, seeds the random stream
    draw: Callable[[int, np.random.Generator], ParticleState]


class PartMaker:
    """n particles in blocks; subclasses give `n`, `seed` and `blocks()`, and `meta` (the
    state's meta: galaxies' names, ...)."""

    n: int
    seed: int
    meta: dict

    def blocks(self) -> list[Block]:
        raise NotImplementedError

    def part(self, start: int, count: int) -> ParticleState:
        """Particles [start, start + count) of the n, not centred."""
        if not 0 <= start <= start + count <= self.n:
            raise ValueError(f"particles [{start}, {start + count}) are not in [0, {self.n})")
        pieces, at, end = [], 0, start + count
        for block in self.blocks():
            a, b = max(start - at, 0), min(end - at, block.size)  # this block's share
            for c in range(a // CHUNK, -(-b // CHUNK)) if a < b else ():
                size = min(CHUNK, block.size - c * CHUNK)
                piece = block.draw(size, np.random.default_rng([self.seed, *block.key, c]))
                lo, hi = max(a - c * CHUNK, 0), min(b - c * CHUNK, size)
                pieces.append(piece if (lo, hi) == (0, size) else piece.take(slice(lo, hi)))
            at += block.size
        if at != self.n:
            raise ValueError(f"the model's blocks hold {at} particles, not {self.n}")
        state = pieces[0] if len(pieces) == 1 else ParticleState.concatenate(pieces)
        state.meta = dict(self.meta)
        return state

    def finish(self, state: ParticleState, total: np.ndarray) -> ParticleState:
        """A part placed by the moments of all parts (`total`): centred on the centre of
        mass at rest (a model placed elsewhere moves it there after)."""
        return centred(state, total)

    def whole(self) -> ParticleState:
        """All n particles, finished."""
        state = self.part(0, self.n)
        return self.finish(state, moments(state))


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
