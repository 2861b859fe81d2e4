"""The Hermite integrator with block time steps on the CPU engine: the oracle of the GPU one."""
import math

import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces, direct_forces_jerk
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.integrators import blocks
from galaxyview.errors import EngineError, ParameterError
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState


def test_jerk_is_the_time_derivative_of_the_acceleration():
    rng = np.random.default_rng(1)
    x, v, m = rng.normal(size=(40, 3)), rng.normal(size=(40, 3)), rng.uniform(0.1, 1, 40)
    acc, pot, jerk = direct_forces_jerk(x, v, m, 0.1, G=1.3, chunk_pairs=7)
    h = 1e-6
    ahead, _ = direct_forces(x + h * v, m, 0.1, G=1.3)
    behind, _ = direct_forces(x - h * v, m, 0.1, G=1.3)
    np.testing.assert_allclose(jerk, (ahead - behind) / (2 * h), rtol=1e-7, atol=1e-9)
    plain_a, plain_p = direct_forces(x, m, 0.1, G=1.3)
    np.testing.assert_allclose(acc, plain_a, rtol=1e-13)
    np.testing.assert_allclose(pot, plain_p, rtol=1e-13)


def test_block_schedule():
    L = 4  # steps of 16, 8, 4, 2, 1 ticks
    counts = np.bincount([1, 3, 3], minlength=L + 1)
    assert blocks.next_block(0, counts, L) == (2, 3)  # level 3 (2 ticks) is due first
    assert blocks.next_block(2, counts, L) == (4, 2)  # t = 4: levels >= 2 are due
    assert blocks.next_block(6, counts, L) == (8, 1)  # t = 8: level 1 too
    # halve as often as the criterion asks; double only where the block allows it
    h = np.array([0.5, 0.5, 0.5, 0.5])
    crit = np.array([0.3, 0.1, 1.2, 1.2])
    level = np.array([1, 1, 1, 1])
    assert blocks.new_levels(level, crit, h, 8, L).tolist() == [2, 4, 1, 1]
    assert blocks.new_levels(level, crit, h, 16, L).tolist() == [2, 4, 0, 0]
    assert blocks.initial_levels(np.array([2.0, 0.3, 1e-9]), 1.0, L).tolist() == [0, 2, 4]


def _kepler(e=0.9, integrator="hermite4", eta=0.02, orbits=100):
    ra = 1 + e
    va = math.sqrt((1 - e) / (1 + e))
    state = ParticleState([[-0.5 * ra, 0, 0], [0.5 * ra, 0, 0]],
                          [[0, -0.5 * va, 0], [0, 0.5 * va, 0]], [0.5, 0.5])
    period = 2 * math.pi
    eng = CPUEngine(Params(eps=0.0, dt=period / 8, eta=eta, integrator=integrator))
    eng.load(state)
    e0 = eng.energies().total
    eng.step(8 * orbits)
    sep = eng.system.pos[1] - eng.system.pos[0]
    phase = math.atan2(sep[1], sep[0])  # 0 after whole orbits: the phase error
    return abs(eng.energies().total / e0 - 1), abs(phase), eng


@pytest.mark.slow
def test_kepler_orbit_follows_the_fourth_order_error_law():
    """e = 0.9 over 100 orbits. Aarseth's criterion gives steps ~ sqrt(eta), so eta / 4 halves
    every step: a 4th-order scheme's errors fall at least 2^4 = 16 times. (The energy error of
    this time-symmetric corrector falls ~2^5 on a periodic orbit; the phase tends to 2^4:
    measured 35x, 31x, 31x and 34x, 27x, 19x for eta 0.08 ... 0.00125 over 10 orbits.)"""
    de1, dphi1, eng = _kepler(eta=0.02)
    de2, dphi2, _ = _kepler(eta=0.005)
    print(f"dE/E {de1:.2e} -> {de2:.2e} ({de1 / de2:.1f}x); phase {dphi1:.2e} -> {dphi2:.2e} "
          f"({dphi1 / dphi2:.1f}x)")
    assert de1 < 1e-3 and dphi1 < 0.1
    assert 12 < de1 / de2 < 64 and 12 < dphi1 / dphi2 < 64
    assert eng.time == pytest.approx(200 * math.pi)
    assert eng.time_steps().levels == 1


def _triple(integrator):
    """A tight binary and a distant third body: in block steps the third takes far longer
    steps than the binary."""
    pos = [[-0.05, 0, 0], [0.05, 0, 0], [3.0, 0, 0]]
    vb = math.sqrt(0.8 / 0.1) / 2
    vo = math.sqrt(1.0 / 3.0)
    vel = [[0, -vb, 0.1 * vo], [0, vb, 0.1 * vo], [0, -0.4 * vo, -0.2 * vo]]
    state = ParticleState(pos, vel, [0.4, 0.4, 0.2])
    eng = CPUEngine(Params(eps=0.0, dt=0.25, eta=0.005, integrator=integrator))
    eng.load(state)
    eng.step(40)
    return eng


@pytest.mark.slow
def test_block_steps_follow_the_shared_step():
    block, shared = _triple("hermite4"), _triple("hermite4-shared")
    lb, ls = block.time_steps(), shared.time_steps()
    assert lb.counts[lb.counts.nonzero()[0][0]] == 1  # the third body alone on a coarse level
    assert np.count_nonzero(lb.counts) == 2 and np.count_nonzero(ls.counts) == 1
    assert lb.active_fraction < 0.9 and ls.active_fraction == 1.0
    dx = np.abs(block.system.pos - shared.system.pos).max()
    assert dx < 1e-6, dx


@pytest.mark.parametrize("integrator", ["hermite4", "hermite4-shared"])
@pytest.mark.slow
def test_against_rebound_ias15(integrator):
    """N = 64 Plummer, eps = 0, one N-body time unit: every position within 1e-6 of IAS15's."""
    rebound = pytest.importorskip("rebound", reason="rebound is a test dependency")
    state = plummer_sphere(64, np.random.default_rng(3))
    sim = rebound.Simulation()
    sim.integrator, sim.G = "ias15", 1.0
    for x, v, m in zip(state.pos.astype(float), state.vel.astype(float), state.mass.astype(float)):
        sim.add(m=m, x=x[0], y=x[1], z=x[2], vx=v[0], vy=v[1], vz=v[2])
    sim.integrate(1.0, exact_finish_time=1)
    ref = np.array([[p.x, p.y, p.z] for p in sim.particles])
    eng = CPUEngine(Params(eps=0.0, dt=1 / 16, eta=0.005, integrator=integrator))
    eng.load(state)
    eng.step(16)
    err = np.linalg.norm(eng.system.pos - ref, axis=1)
    assert err.max() < 1e-6, err.max()
    assert eng.time == pytest.approx(1.0)


def test_plummer_conserves_energy_and_keeps_blocks_synchronised():
    state = plummer_sphere(200, np.random.default_rng(7))
    eng = CPUEngine(Params(eps=1e-3, dt=1 / 16, eta=0.01, integrator="hermite4"))
    eng.load(state)
    e0 = eng.energies().total
    eng.step(8)
    ts = eng.time_steps()
    assert ts.counts.sum() == 200 and ts.levels >= 3 and 0 < ts.active_fraction < 0.6
    # the step ends synchronised: the output equals a fresh force evaluation there
    acc, pot, _ = direct_forces_jerk(eng.system.pos, eng.system.vel, eng.system.mass, 1e-3)
    np.testing.assert_allclose(eng.accelerations()[1], pot, rtol=1e-12)
    eng.set_params(dt=1 / 10, eta=0.02)  # a new largest step: levels rescaled, still exact
    eng.step(5)
    assert eng.time == pytest.approx(1.0)
    assert abs(eng.energies().total / e0 - 1) < 1e-6


def test_hermite_takes_direct_gravity_and_says_so():
    assert CPUEngine(Params(integrator="hermite4")).gravity == "direct"
    with pytest.raises(EngineError, match="needs direct gravity"):
        CPUEngine(Params(integrator="hermite4"), gravity="tree")
    with pytest.raises(ParameterError, match="eta"):
        Params(eta=0)
    with pytest.raises(ParameterError, match="block_levels"):
        Params(block_levels=41)


def test_a_failed_step_keeps_the_last_good_state(monkeypatch):
    state = plummer_sphere(50, np.random.default_rng(4))
    eng = CPUEngine(Params(eps=1e-2, dt=1 / 16, integrator="hermite4"))
    eng.load(state)
    eng.step(2)
    before = eng.state()
    calls = {"n": 0}
    forces = eng.system.forces

    def poisoned(active=None, jerk=False):
        calls["n"] += 1
        forces(active, jerk)
        if calls["n"] == 3:
            eng.system.pos[0, 0] = np.nan
            eng._check(eng.system.pos, "positions")

    monkeypatch.setattr(eng.system, "forces", poisoned)
    with pytest.raises(EngineError, match="NaN"):
        eng.step(1)
    monkeypatch.undo()
    after = eng.state()
    np.testing.assert_array_equal(after.pos, before.pos)
    assert after.time == before.time
    eng.step(1)  # and it goes on from there
    ref = CPUEngine(Params(eps=1e-2, dt=1 / 16, integrator="hermite4"))
    ref.load(state)
    ref.step(3)
    np.testing.assert_array_equal(eng.state().pos, ref.state().pos)


def test_restart_from_the_exact_state_is_bitwise():
    state = plummer_sphere(100, np.random.default_rng(9))
    p = Params(eps=1e-3, dt=1 / 16, eta=0.01, integrator="hermite4")
    whole = CPUEngine(p)
    whole.load(state)
    whole.step(6)
    first = CPUEngine(p)
    first.load(state)
    first.step(3)
    second = CPUEngine(p)
    second.load_exact(first.exact_state())
    second.step(3)
    np.testing.assert_array_equal(second.system.pos, whole.system.pos)
    np.testing.assert_array_equal(second.system.vel, whole.system.vel)
    assert second.time_steps().counts.tolist() == whole.time_steps().counts.tolist()
