"""The parallel engine's pieces in one process: LET export and import, splitters."""
import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.forces import tree_forces
from galaxyview.engines.cpu.tree import build_tree
from galaxyview.engines.parallel import decompose, let


def _rel(a, b):
    return np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)


def _split_forces(pos, mass, mine, theta, eps, walk=tree_forces):
    """Forces on the particles `mine` from their own tree plus the LET of the others' tree,
    in the order of `mine`'s tree, and that tree's order."""
    local = build_tree(pos[mine], mass[mine])
    other = np.setdiff1d(np.arange(len(pos)), mine)
    remote = build_tree(pos[other], mass[other])
    acc, pot, _, _ = walk(local, theta, eps)
    cells, particles = let.export(remote, theta, let.domain_box(local.pos))
    a, p, _, _ = walk(let.extra_tree(local, cells, particles), theta, eps)
    return acc + a[-local.n:], pot + p[-local.n:], mine[local.order], len(cells), len(particles)


@pytest.mark.parametrize("n, cut", [(4000, 0.0), (6000, 0.6)])
def test_let_forces_match_direct_sum_like_one_tree(n, cut):
    rng = np.random.default_rng(n)
    pos = (rng.standard_normal((n, 3)) * [1, 1, 0.3]).astype(np.float32)
    mass = np.full(n, 1.0 / n, np.float32)
    theta, eps = 0.5, 0.01
    mine = np.flatnonzero(pos[:, 0] < cut)
    acc, pot, at, n_cells, n_particles = _split_forces(pos, mass, mine, theta, eps)
    ref, ref_pot = direct_forces(pos.astype(np.float64), mass.astype(np.float64), eps, 1.0,
                                 targets=at)
    err = _rel(acc, ref)
    one = build_tree(pos, mass)
    acc1, _, _, _ = tree_forces(one, theta, eps)
    where = np.empty(n, np.int64)
    where[one.order] = np.arange(n)
    err1 = _rel(acc1[where[at]], ref)
    # the LET is a small part of the other domain, yet the errors are the tree's own
    assert 0 < n_particles < n - len(mine) and n_cells < one.n_cells
    assert np.median(err) < 1.5 * np.median(err1) and np.median(err) < 3e-4
    assert np.percentile(err, 99) < 3 * np.percentile(err1, 99)
    assert np.abs(pot - ref_pot).max() < 1e-3 * np.abs(ref_pot).max()


def test_let_walk_is_the_same_with_the_compiled_walk():
    pytest.importorskip("numba")
    from galaxyview.engines.cpu_numba import walk

    rng = np.random.default_rng(5)
    pos = rng.standard_normal((3000, 3)).astype(np.float32)
    mass = np.full(3000, 1 / 3000, np.float32)
    mine = np.flatnonzero(pos[:, 1] > 0.3)
    acc, pot, *_ = _split_forces(pos, mass, mine, 0.6, 0.02)
    acc_n, pot_n, *_ = _split_forces(pos, mass, mine, 0.6, 0.02, walk.tree_forces)
    # the compiled walk adds back the own pair's -m/eps, absent from an extra tree
    own = mass[0] / np.sqrt(np.float64(np.float32(0.02) ** 2))  # equal masses
    assert np.percentile(_rel(acc_n, acc), 99) < 1e-4
    assert np.allclose(pot_n - own, pot, rtol=1e-4)


def test_an_empty_or_far_domain_needs_little():
    rng = np.random.default_rng(1)
    tree = build_tree(rng.standard_normal((2000, 3)).astype(np.float32),
                      np.ones(2000, np.float32))
    far = np.array([100, 100, 100, 101, 101, 101], np.float32)
    cells, particles = let.export(tree, 0.5, far)
    assert len(cells) == 1 and len(particles) == 0  # the root as one multipole
    assert cells[0, 3] == pytest.approx(2000)
    empty = let.domain_box(np.zeros((0, 3), np.float32))
    assert [len(a) for a in let.export(tree, 0.5, empty)] == [0, 0]


def test_splitters_cut_the_weighted_sample_evenly():
    keys = np.arange(1000, dtype=np.uint64)
    cuts = decompose.split_sample(keys, np.ones(1000), 4)
    assert list(np.bincount(decompose.owners(keys, cuts), minlength=4)) == [250] * 4
    # particles of the upper half cost three times as much: they are spread over more ranks
    weight = np.where(keys < 500, 1.0, 3.0)
    owner = decompose.owners(keys, decompose.split_sample(keys, weight, 4))
    cost = np.bincount(owner, weights=weight, minlength=4)
    assert cost.max() / cost.mean() < 1.01
    assert np.bincount(owner)[0] > 2 * np.bincount(owner)[3]
