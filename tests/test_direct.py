"""Direct summation: the float64 reference of every force test."""
import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.errors import GalaxyviewError, ParameterError


def naive(pos, mass, eps, G=1.0):
    """The textbook double loop in float64."""
    n = len(mass)
    acc, pot = np.zeros((n, 3)), np.zeros(n)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            d = pos[j] - pos[i]
            r2 = d @ d + eps * eps
            if r2 == 0:
                continue
            acc[i] += G * mass[j] * d / r2**1.5
            pot[i] -= G * mass[j] / np.sqrt(r2)
    return acc, pot


@pytest.fixture
def cloud():
    rng = np.random.default_rng(4)
    return rng.normal(size=(61, 3)), rng.uniform(0.1, 2.0, 61)


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.7])
def test_matches_naive_double_loop(cloud, eps):
    pos, mass = cloud
    acc, pot = direct_forces(pos, mass, eps, G=1.7)
    ref_a, ref_p = naive(pos, mass, eps, G=1.7)
    assert acc.dtype == pot.dtype == np.float64
    assert np.allclose(acc, ref_a, rtol=1e-12, atol=0)
    assert np.allclose(pot, ref_p, rtol=1e-12, atol=0)


def test_subset_of_targets_and_chunking_agree(cloud):
    pos, mass = cloud
    full_a, full_p = direct_forces(pos, mass, 0.1)
    targets = np.array([60, 3, 3, 17, 0])
    acc, pot = direct_forces(pos, mass, 0.1, targets=targets, chunk_pairs=1)
    assert acc.shape == (5, 3) and pot.shape == (5,)
    assert np.allclose(acc, full_a[targets], rtol=1e-13, atol=0)
    assert np.allclose(pot, full_p[targets], rtol=1e-13, atol=0)


def test_two_bodies_and_momentum():
    pos = np.array([[0.0, 0, 0], [3.0, 4.0, 0]])
    mass = np.array([2.0, 5.0])
    acc, pot = direct_forces(pos, mass, 0.0)
    unit = np.array([0.6, 0.8, 0.0])
    assert np.allclose(acc, [5.0 / 25 * unit, -2.0 / 25 * unit], rtol=1e-14)
    assert np.allclose(pot, [-5.0 / 5, -2.0 / 5], rtol=1e-14)
    # Newton's third law: the total force vanishes
    rng = np.random.default_rng(0)
    pos, mass = rng.normal(size=(300, 3)), rng.uniform(0.5, 1, 300)
    acc, _ = direct_forces(pos, mass, 0.01)
    assert np.abs(mass @ acc).max() < 1e-12 * np.abs(mass[:, None] * acc).sum()


def test_coincident_particles_without_softening_are_left_out():
    pos = np.array([[1.0, 1, 1], [1.0, 1, 1], [2.0, 1, 1]])
    acc, pot = direct_forces(pos, np.ones(3), 0.0)
    assert np.isfinite(acc).all() and np.isfinite(pot).all()
    assert np.allclose(acc[0], [1, 0, 0]) and np.allclose(pot, [-1, -1, -2])


def test_bad_input_is_named():
    with pytest.raises(GalaxyviewError, match="shape"):
        direct_forces(np.zeros((4, 2)), np.ones(4), 0.1)
    with pytest.raises(GalaxyviewError, match="target"):
        direct_forces(np.zeros((4, 3)), np.ones(4), 0.1, targets=[4])


def test_negative_softening_is_refused():
    with pytest.raises(ParameterError, match="eps"):
        direct_forces(np.zeros((2, 3)), np.ones(2), -0.1)
