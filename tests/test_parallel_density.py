"""The local density over several processes (engines/parallel/density.py) without MPI: ranks
as threads sharing one exchange. Each rank's share of a set cut along the Peano-Hilbert curve,
strays included, gets the density key_density gives the whole set; key_density is
tree_density in the same cube."""
import threading

import numpy as np
import pytest

from galaxyview.engines.cpu import keys as mkeys
from galaxyview.engines.parallel import decompose, density
from galaxyview.model.density import key_density, tree_density
from galaxyview.model.ics.plummer import plummer_sphere


class ThreadComm:
    """The collectives density.py uses, between threads (one per rank)."""

    def __init__(self, rank, size, shared):
        self.rank, self.size, self._shared = rank, size, shared

    def _swap(self, value):
        slots, barrier = self._shared
        slots[self.rank] = value
        barrier.wait()
        got = list(slots)
        barrier.wait()
        return got

    def allgather(self, values, what="", dtype=np.float64):
        return np.stack([np.asarray(v, dtype).reshape(-1) for v in self._swap(values)])

    def alltoallv(self, parts, what=""):
        return [row[self.rank] for row in self._swap(parts)]


def _ranks(size, work):
    """work(comm) on `size` threads; their results in rank order."""
    shared = ([None] * size, threading.Barrier(size, timeout=30))
    out, errors = [None] * size, []

    def run(r):
        try:
            out[r] = work(ThreadComm(r, size, shared))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
            shared[1].abort()
    threads = [threading.Thread(target=run, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def _clumpy(n, rng):
    """A Plummer sphere and a smaller, denser one beside it, of unequal masses."""
    a = plummer_sphere(n - n // 4, rng)
    b = plummer_sphere(n // 4, rng, mass=0.3, scale=0.2)
    pos = np.concatenate([a.pos, b.pos + [1.5, 0.5, 0.0]]).astype(np.float32)
    return pos, np.concatenate([a.mass, b.mass]).astype(np.float32)


def test_key_density_is_tree_density_in_the_same_cube():
    for n in (3000, 40000):
        pos, mass = _clumpy(n, np.random.default_rng(n))
        lo, size, scale = mkeys.bounding_cube(pos)
        keys = mkeys.morton_keys(mkeys.grid_coords(pos, lo, scale))
        want, got = tree_density(pos, mass), key_density(keys, mass, float(size))
        rel = np.abs(got / want - 1)
        # the cube's side in float32 there, float64 here: a few points change cells
        assert np.mean(rel < 1e-5) > 0.98
        assert np.percentile(np.abs(np.log10(got / want)), 99.5) < 0.5
        assert len(np.unique(want)) > 50  # not one value


@pytest.mark.parametrize("size, n, strays", [(2, 5000, 0.0), (3, 30000, 0.02), (4, 30000, 0.1)])
def test_shares_along_the_curve_give_the_whole_sets_density(size, n, strays):
    rng = np.random.default_rng(size)
    pos, mass = _clumpy(n, rng)
    cube = mkeys.bounding_cube(pos)
    keys = decompose.particle_keys(pos, cube)
    cuts = np.sort(rng.choice(keys, size - 1, replace=False))
    owner = decompose.owners(keys, cuts)
    moved = rng.random(n) < strays  # particles that drifted out since the cut
    held = np.where(moved, rng.integers(0, size, n), owner)
    whole = key_density(keys, mass, float(cube[1]))

    def work(comm):
        mine = np.flatnonzero(held == comm.rank)
        return mine, density.domain_density(comm, keys[mine], mass[mine], cuts,
                                            float(cube[1]))
    got = np.empty(n)
    for mine, values in _ranks(size, work):
        got[mine] = values
    assert np.sum(held != owner) == 0 if strays == 0 else np.sum(held != owner) > 20
    np.testing.assert_allclose(got, whole, rtol=1e-12)
    # without the end cells' exchange the domains' faces would show
    alone = np.empty(n)
    for r in range(size):
        mine = np.flatnonzero(owner == r)
        alone[mine] = key_density(keys[mine], mass[mine], float(cube[1]))
    assert np.mean(~np.isclose(alone, whole, rtol=1e-12)) > 0.001


def test_the_end_cells_of_an_empty_share_add_nothing():
    keys = np.array([5, 9, 1 << 60], np.uint64)
    mass = np.array([1.0, 2.0, 4.0])

    def work(comm):
        mine = slice(0, 3) if comm.rank == 0 else slice(0, 0)
        return density.domain_density(comm, keys[mine], mass[mine], np.array([1 << 62],
                                      np.uint64), 2.0)
    first, empty = _ranks(2, work)
    np.testing.assert_allclose(first, key_density(keys, mass, 2.0))
    assert len(empty) == 0
