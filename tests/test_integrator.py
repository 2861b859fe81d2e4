"""The kick-drift-kick leapfrog of the CPU engine: structure, symmetries, order, accuracy."""
import numpy as np
import pytest

from galaxyview.engines.cpu import CPUEngine
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.model import diagnostics as dg
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState


def energy_error(gravity, n, dt, eps, theta=0.5, t_end=1.0, seed=0):
    eng = CPUEngine(Params(theta=theta, dt=dt, eps=eps), gravity=gravity)
    eng.load(plummer_sphere(n, np.random.default_rng(seed)))
    e0 = eng.energies().total
    eng.step(round(t_end / dt))
    assert eng.time == pytest.approx(t_end)
    return abs(eng.energies().total - e0) / abs(e0)


def test_one_step_is_kick_drift_kick():
    s = plummer_sphere(100, np.random.default_rng(5))
    dt, eps = 0.01, 0.1
    eng = CPUEngine(Params(dt=dt, eps=eps), gravity="direct")
    eng.load(s)
    eng.step()
    x0, v0 = s.pos.astype(np.float64), s.vel.astype(np.float64)
    a0, _ = direct_forces(x0, s.mass, eps)
    v_half = v0 + 0.5 * dt * a0
    x1 = x0 + dt * v_half
    a1, p1 = direct_forces(x1, s.mass, eps)
    v1 = v_half + 0.5 * dt * a1
    out = eng.state()
    assert np.allclose(out.pos, x1, rtol=1e-6, atol=1e-7)
    assert np.allclose(out.vel, v1, rtol=1e-6, atol=1e-7)
    acc, pot = eng.accelerations()  # kept for the next step's first kick
    assert np.allclose(acc, a1, rtol=1e-12) and np.allclose(pot, p1, rtol=1e-12)
    assert out.time == pytest.approx(dt)


def test_time_reversible():
    s = plummer_sphere(64, np.random.default_rng(6))
    eng = CPUEngine(Params(dt=0.01, eps=0.1), gravity="direct")
    eng.load(s)
    eng.step(40)
    back = eng.state()
    back.vel = -back.vel
    eng.load(back)
    eng.step(40)
    end = eng.state()
    assert np.abs(end.pos - s.pos).max() < 1e-5  # float32 round trips through state()
    assert np.abs(end.vel + s.vel).max() < 1e-5


def test_momenta_conserved_with_direct_summation():
    """Pairwise central forces: total momentum and angular momentum stay (to float32 output)."""
    s = plummer_sphere(300, np.random.default_rng(8))
    s.vel += np.float32([0.1, -0.2, 0.05])
    eng = CPUEngine(Params(dt=0.02, eps=0.05), gravity="direct")
    eng.load(s)
    eng.step(25)
    end = eng.state()
    scale = (s.mass[:, None] * np.abs(s.vel)).sum()
    p0, p1 = dg.linear_momentum(s.vel, s.mass), dg.linear_momentum(end.vel, end.mass)
    l0 = dg.angular_momentum(s.pos, s.vel, s.mass)
    l1 = dg.angular_momentum(end.pos, end.vel, end.mass)
    assert np.abs(p1 - p0).max() < 1e-6 * scale
    assert np.abs(l1 - l0).max() < 1e-6 * scale * np.abs(s.pos).max()
    assert np.abs(end.pos - s.pos).max() > 0.1  # the particles did move


@pytest.mark.parametrize("gravity", ["tree", "direct"])
def test_circular_binary_returns_after_one_period(gravity):
    """Two equal masses 1 apart on a circular orbit (G M = 1): period 2 pi."""
    pos = np.array([[-0.5, 0, 0], [0.5, 0, 0]], np.float32)
    vel = np.array([[0, -0.5, 0], [0, 0.5, 0]], np.float32)
    errors = []
    for steps in (200, 400):
        eng = CPUEngine(Params(dt=2 * np.pi / steps, eps=0.0), gravity=gravity)
        eng.load(ParticleState(pos, vel, np.array([0.5, 0.5], np.float32)))
        eng.step(steps)
        errors.append(np.abs(eng.state().pos - pos).max())
    assert errors[0] < 0.05 and 3 < errors[0] / errors[1] < 5  # second order in dt


@pytest.mark.slow
def test_direct_energy_error_is_second_order():
    """4096-body Plummer sphere over one time unit: halving dt cuts the error ~4x."""
    coarse = energy_error("direct", 4096, 1 / 32, eps=0.1)
    fine = energy_error("direct", 4096, 1 / 64, eps=0.1)
    assert 2.5 < coarse / fine < 6
    assert fine < 1e-4


@pytest.mark.slow
def test_tree_energy_error_small_over_one_time_unit():
    assert energy_error("tree", 4096, 1 / 64, eps=0.05, theta=0.5) <= 1e-3
