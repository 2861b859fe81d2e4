"""Energies, momenta, virial ratio, force-error percentiles and radii."""
import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.errors import GalaxyviewError
from galaxyview.model import diagnostics as dg
from galaxyview.model.ics.plummer import HENON_SCALE, plummer_sphere


def test_two_body_energies_and_momenta():
    pos = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    vel = np.array([[0, 0.5, 0], [0, -1.0, 0]])
    mass = np.array([2.0, 1.0])
    pot = np.array([-1.0 / 2, -2.0 / 2])  # phi_i = -m_j / r
    assert dg.kinetic_energy(vel, mass) == pytest.approx(0.5 * (2 * 0.25 + 1 * 1.0))
    assert dg.potential_energy(mass, pot) == pytest.approx(-2.0 * 1.0 / 2)  # -m1 m2 / r
    assert dg.total_energy(vel, mass, pot) == pytest.approx(0.75 - 1.0)
    assert np.allclose(dg.linear_momentum(vel, mass), [0, 0, 0])
    assert np.allclose(dg.angular_momentum(pos, vel, mass), [0, 0, 2 * 0.5 + 1.0])
    assert np.allclose(dg.angular_momentum(pos, vel, mass, about=[1, 0, 0]), [0, 0, 2.0])
    assert np.allclose(dg.centre_of_mass(pos, mass), [1.0 / 3, 0, 0])
    assert dg.virial_ratio(0.75, -1.0) == pytest.approx(1.5)


def test_plummer_sphere_is_virialised_in_henon_units():
    s = plummer_sphere(4096, np.random.default_rng(2))
    _, pot = direct_forces(s.pos, s.mass, 0.0)
    summary = dg.summarize(s.pos, s.vel, s.mass, pot)
    assert summary.total == pytest.approx(-0.25, abs=0.02)
    assert summary.virial_ratio == pytest.approx(1.0, abs=0.06)
    assert np.abs(summary.momentum).max() < 1e-6 and np.abs(summary.centre_of_mass).max() < 1e-6
    # analytic half-mass radius of a Plummer sphere: a / sqrt(2^(2/3) - 1)
    r_half = HENON_SCALE / np.sqrt(2 ** (2 / 3) - 1)
    assert summary.half_mass_radius == pytest.approx(r_half, rel=0.05)


def test_half_mass_radius_of_shells():
    pos = np.array([[1.0, 0, 0], [0, 2.0, 0], [0, 0, 3.0], [4.0, 0, 0]])
    mass = np.array([1.0, 1.0, 1.0, 1.0])
    assert dg.half_mass_radius(pos, mass, centre=[0, 0, 0]) == 2.0
    assert dg.half_mass_radius(pos, np.array([3.0, 0.5, 0.5, 0.5]), centre=[0, 0, 0]) == 1.0


def test_force_error_percentiles_in_the_order_asked():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(1000, 3))
    frac = rng.uniform(0, 0.1, 1000)
    direction = rng.normal(size=(1000, 3))
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    test = ref + (frac * np.linalg.norm(ref, axis=1))[:, None] * direction
    got = dg.force_error_percentiles(test, ref, (99, 50, 90))
    assert isinstance(got, tuple) and len(got) == 3
    assert np.allclose(got, np.percentile(frac, [99, 50, 90]), rtol=1e-9)
    p50, p90, p99 = dg.force_error_percentiles(test, ref)
    assert p50 < p90 < p99


def test_relative_errors_where_the_reference_vanishes():
    ref = np.array([[0.0, 0, 0], [0, 0, 0], [1, 0, 0]])
    test = np.array([[0.0, 0, 0], [1, 0, 0], [1, 0, 0]])
    assert list(dg.relative_force_errors(test, ref)) == [0.0, np.inf, 0.0]


def test_bad_input_gets_a_message():
    with pytest.raises(GalaxyviewError, match=r"\(3, 3\)"):
        dg.kinetic_energy(np.zeros((2, 3)), np.ones(3))
    with pytest.raises(GalaxyviewError, match="pot"):
        dg.potential_energy(np.ones(3), np.ones(4))
    with pytest.raises(GalaxyviewError, match="0..100"):
        dg.force_error_percentiles(np.ones((2, 3)), np.ones((2, 3)), (50, 120))
    with pytest.raises(GalaxyviewError, match="positive total mass"):
        dg.centre_of_mass(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(GalaxyviewError, match="non-zero potential"):
        dg.virial_ratio(1.0, 0.0)
