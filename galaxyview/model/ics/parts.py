"""Initial conditions made in parts: a model whose particles are drawn independently, made
as any range [start, start + count) of its n particles alone, the same particles whatever
the ranges. A distributed engine makes each process's share where it runs (a billion
particles are never on one host at once); `whole` makes them all on one.

A model is a list of blocks (a galaxy's disk, bulge, halo, ...), each drawn CHUNK particles
at a time from its own random stream (seeded by the seed, the block's key and the chunk).
The parts are not centred; their sums (`moments`) centre them on the centre of mass at
rest (`centred`). A part of several chunks may be made by worker processes, each a run of
chunks (the same particles: the streams are the chunks').
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from galaxyview.errors import GalaxyviewError
from galaxyview.model.state import ParticleState

CHUNK = 1 << 20  # particles of one random stream
# a ParticleState's arrays: name, dtype, values a particle
FIELDS = (("pos", np.float32, 3), ("vel", np.float32, 3), ("mass", np.float32, 1),
          ("component", np.uint8, 1), ("galaxy", np.int16, 1), ("radius", np.float32, 1))
WORKERS_FROM = 2 * CHUNK  # smaller parts are made here (a worker starts in ~0.75 s)
# With fewer CPU threads than this a part is made here: on a 2-core machine 4 workers made
# an 8M Plummer sphere in 1.5-1.7 s against 2.1-2.7 s here, but the merger in 5.5 s against
# 2.5 s (each worker first computes the galaxies' equilibrium tables, 0.73 s).
MIN_WORKERS = 4
BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


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

    def part(self, start: int, count: int, workers: int = 1,
             progress: Callable[[int], None] | None = None) -> ParticleState:
        """Particles [start, start + count) of the n, not centred; made by up to `workers`
        processes when they are at least MIN_WORKERS and the particles WORKERS_FROM.
        progress(k): k more particles made."""
        if not 0 <= start <= start + count <= self.n:
            raise ValueError(f"particles [{start}, {start + count}) are not in [0, {self.n})")
        if workers >= MIN_WORKERS and count >= WORKERS_FROM:
            return self._by_workers(start, count, workers, progress)
        pieces, at, end = [], 0, start + count
        for block in self.blocks():
            a, b = max(start - at, 0), min(end - at, block.size)  # this block's share
            for c in range(a // CHUNK, -(-b // CHUNK)) if a < b else ():
                size = min(CHUNK, block.size - c * CHUNK)
                piece = block.draw(size, np.random.default_rng([self.seed, *block.key, c]))
                lo, hi = max(a - c * CHUNK, 0), min(b - c * CHUNK, size)
                pieces.append(piece if (lo, hi) == (0, size) else piece.take(slice(lo, hi)))
                if progress:
                    progress(hi - lo)
            at += block.size
        if at != self.n:
            raise ValueError(f"the model's blocks hold {at} particles, not {self.n}")
        state = pieces[0] if len(pieces) == 1 else ParticleState.concatenate(pieces)
        state.meta = dict(self.meta)
        return state

    def _by_workers(self, start: int, count: int, workers: int, progress) -> ParticleState:
        """The part made by up to `workers` processes, one run of about count / workers
        particles each (cut at multiples of CHUNK, so that few chunks are drawn twice). The
        workers are fresh interpreters that import this module alone (the caller may be an
        MPI process, whose modules a forked or spawned copy would initialise again); each
        sends its rows' raw bytes, read straight into the part's arrays."""
        end = start + count
        pieces = min(workers, count // CHUNK)
        cuts = np.round(np.linspace(start, end, pieces + 1)[1:-1] / CHUNK).astype(np.int64) * CHUNK
        edges = np.unique(np.r_[start, cuts[(cuts > start) & (cuts < end)], end])
        runs = [(int(a), int(b - a)) for a, b in zip(edges[:-1], edges[1:])]
        arrays = {name: np.empty((count, width) if width > 1 else count, dtype)
                  for name, dtype, width in FIELDS}
        _run_workers(self, runs, start, arrays, progress)
        return ParticleState(**arrays, meta=dict(self.meta))

    def finish(self, state: ParticleState, total: np.ndarray) -> ParticleState:
        """A part placed by the moments of all parts (`total`): centred on the centre of
        mass at rest (a model placed elsewhere moves it there after)."""
        return centred(state, total)

    def whole(self, workers: int = 1, progress: Callable[[int], None] | None = None
              ) -> ParticleState:
        """All n particles, finished (made by up to `workers` processes; `part`'s progress)."""
        state = self.part(0, self.n, workers, progress)
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


def _run_workers(maker: PartMaker, runs: list, start: int, arrays: dict, progress=None) -> None:
    """maker.part of each (first, count) in `runs`, each in a worker process of its own,
    into `arrays` (FIELDS of the part that begins at particle `start`); progress(count) as
    each run arrives."""
    root = str(Path(__file__).resolve().parents[3])  # where `galaxyview` imports from
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    # one BLAS thread a worker, as the workers fill the cores: on a 16-core host 16 workers
    # made 64M of the merger in 6.6-7.7 s, and 16.8 s with a BLAS thread a core each
    env.update(dict.fromkeys(BLAS_THREADS, "1"))
    code = "from galaxyview.model.ics.parts import _serve_run; _serve_run()"
    procs = []
    try:
        for run in runs:
            proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            procs.append(proc)
            proc.stdin.write(pickle.dumps((maker, *run)))
            proc.stdin.close()
        for proc, (first, n) in zip(procs, runs):
            rows = slice(first - start, first - start + n)
            got = all(_read_into(proc.stdout, arrays[name][rows]) for name, _, _ in FIELDS)
            proc.wait()
            if not got or proc.returncode != 0:
                why = proc.stderr.read().decode(errors="replace").strip().splitlines()
                raise GalaxyviewError(
                    f"a worker making particles [{first}, {first + n}) failed (exit "
                    f"{proc.returncode}): {why[-1] if why else 'no message'}; with too "
                    f"little memory, give fewer threads (GALAXYVIEW_THREADS)")
            if progress:
                progress(n)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()


def _read_into(stream, array: np.ndarray) -> bool:
    """Fill the contiguous `array` from `stream`; False at an early end."""
    view, at = memoryview(array).cast("B"), 0
    while at < len(view):
        got = stream.readinto(view[at:])
        if not got:
            return False
        at += got
    return True


def _serve_run() -> None:
    """A worker: (maker, first, count) pickled on stdin; the part's FIELDS' bytes on stdout."""
    maker, first, count = pickle.load(sys.stdin.buffer)
    part = maker.part(first, count)
    out = sys.stdout.buffer
    for name, dtype, _ in FIELDS:
        out.write(memoryview(np.ascontiguousarray(getattr(part, name), dtype)).cast("B"))
    out.flush()
