"""The compiled Hermite of the CPU engine (engines/cpu_numba/direct.py) against the numpy one."""
import threading

import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces, direct_forces_jerk
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.cpu_numba import direct
from galaxyview.engines.cpu_numba.engine import NumbaEngine
from galaxyview.errors import EngineError
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState

CLUSTER = dict(eps=1e-4, dt=1 / 16, eta=0.01)  # the star-cluster scene's parameters


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("eps", [0.0, 0.05])
def test_direct_sums_equal_the_numpy_ones(eps):
    rng = np.random.default_rng(3)
    x, v, m = rng.normal(size=(300, 3)), rng.normal(size=(300, 3)), rng.uniform(0.1, 1, 300)
    x[7] = x[3]  # a coincident pair: left out without softening, as numpy does
    targets = np.array([3, 7, 0, 299, 150])
    for t in (None, targets):
        acc, pot, jerk = direct.direct_forces(x, v, m, eps, G=1.3, targets=t)
        ref_a, ref_p, ref_j = direct_forces_jerk(x, v, m, eps, G=1.3, targets=t)
        assert _rel(acc, ref_a) < 1e-13 and _rel(jerk, ref_j) < 1e-13
        assert _rel(pot, ref_p) < 1e-13
        acc2, pot2, none = direct.direct_forces(x, None, m, eps, G=1.3, targets=t)
        ref_a2, ref_p2 = direct_forces(x, m, eps, G=1.3, targets=t)
        assert none is None and _rel(acc2, ref_a2) < 1e-13 and _rel(pot2, ref_p2) < 1e-13


def test_threads_give_the_same_forces_and_steps_as_one_thread(monkeypatch):
    rng = np.random.default_rng(5)
    x, v, m = rng.normal(size=(500, 3)), rng.normal(size=(500, 3)), rng.uniform(0.1, 1, 500)
    state = plummer_sphere(128, rng)
    out = []
    for pairs in (1, 1 << 62):  # every block on threads; every block on the calling thread
        monkeypatch.setattr(direct, "PARALLEL_PAIRS", pairs)
        eng = NumbaEngine(Params(integrator="hermite4", **CLUSTER))
        eng.load(state)
        eng.step(2)
        out.append(direct.direct_forces(x, v, m, 0.01) + (eng.system.pos, eng.system.vel))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def _pair(params, state):
    ref, fast = CPUEngine(params), NumbaEngine(params)
    ref.load(state)
    fast.load(state)
    return ref, fast


def _same_run(ref, fast, steps, tol):
    """Step both engines; the same block schedule every step and states within tol."""
    blocks = 0
    for _ in range(steps):
        ref.step(1)
        fast.step(1)
        a, b = ref.time_steps(), fast.time_steps()
        assert b.block_steps == a.block_steps
        assert b.active_fraction == a.active_fraction
        np.testing.assert_array_equal(fast.integrator.level, ref.integrator.level)
        blocks += a.block_steps
        assert _rel(fast.system.pos, ref.system.pos) < tol
        assert _rel(fast.system.vel, ref.system.vel) < tol
    assert fast.time == ref.time
    return blocks


@pytest.mark.parametrize("integrator", ["hermite4", "hermite4-shared"])
def test_compiled_block_steps_follow_the_numpy_hermite(integrator, monkeypatch):
    state = plummer_sphere(256, np.random.default_rng(7))
    ref, fast = _pair(Params(integrator=integrator, **CLUSTER), state)
    assert ref.system.compiled("hermite_block_steps") is None
    assert fast.system.compiled("hermite_block_steps") is not None
    calls = {"n": 0}
    forces = fast.system.forces

    def counted(active=None, jerk=False):
        calls["n"] += 1
        forces(active, jerk)

    monkeypatch.setattr(fast.system, "forces", counted)
    steps = 4 if integrator == "hermite4" else 1
    blocks = _same_run(ref, fast, steps, 1e-10)
    assert blocks >= (300 if integrator == "hermite4" else 50)
    assert calls["n"] == steps  # no Python per block step: the synchronised forces alone
    np.testing.assert_allclose(fast.system.acc, ref.system.acc, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.system.pot, ref.system.pot, rtol=1e-12)
    assert fast.stats.pp > blocks * 256  # the block steps' interactions are counted


def _binaries(n_single=64, n_binary=6, seed=11):
    """A Plummer sphere with hard binaries (semi-major axis 1e-3, e 0.5) among its stars."""
    rng = np.random.default_rng(seed)
    s = plummer_sphere(n_single + n_binary, rng)
    pos, vel, mass = [s.pos[:n_single]], [s.vel[:n_single]], [s.mass[:n_single]]
    m = s.mass[0]
    for k in range(n_binary):
        c, u = s.pos[n_single + k], s.vel[n_single + k]
        a, e = 1e-3, 0.5
        r = a * (1 + e)  # at apocentre
        vr = np.sqrt(2 * m * (1 - e) / r)  # the relative speed at apocentre
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        side = np.cross(axis, rng.normal(size=3))
        side /= np.linalg.norm(side)
        pos.append([c + 0.5 * r * axis, c - 0.5 * r * axis])
        vel.append([u + 0.5 * vr * side, u - 0.5 * vr * side])
        mass.append([m, m])
    return ParticleState(np.vstack(pos), np.vstack(vel), np.concatenate(mass))


def test_hard_binaries_the_same_schedule_and_orbits():
    ref, fast = _pair(Params(integrator="hermite4", eps=0.0, dt=1 / 256, eta=0.01),
                      _binaries())
    assert ref.integrator.level.max() >= 8  # the binaries run on deep levels
    blocks = _same_run(ref, fast, 2, 1e-9)
    assert blocks >= 300


@pytest.mark.slow
def test_energy_over_a_crossing_time_as_the_numpy_hermite():
    state = plummer_sphere(256, np.random.default_rng(8))
    ref, fast = _pair(Params(integrator="hermite4", **CLUSTER), state)
    e0 = ref.energies().total
    steps = 45  # 2.8 time units: a crossing time 2 sqrt(2) in Henon units
    ref.step(steps)
    fast.step(steps)
    err_ref = abs(ref.energies().total / e0 - 1)
    err_fast = abs(fast.energies().total / e0 - 1)
    assert err_fast < 1e-5
    assert err_fast < 2 * err_ref + 1e-9


def test_restart_of_the_compiled_hermite_is_bitwise():
    state = plummer_sphere(100, np.random.default_rng(9))
    p = Params(eps=1e-3, dt=1 / 16, eta=0.01, integrator="hermite4")
    whole = NumbaEngine(p)
    whole.load(state)
    whole.step(6)
    first = NumbaEngine(p)
    first.load(state)
    first.step(3)
    second = NumbaEngine(p)
    second.load_exact(first.exact_state())
    second.step(3)
    np.testing.assert_array_equal(second.system.pos, whole.system.pos)
    np.testing.assert_array_equal(second.system.vel, whole.system.vel)


def test_non_finite_forces_stop_the_step_and_keep_the_last_good_state():
    eng = NumbaEngine(Params(integrator="hermite4", **CLUSTER))
    eng.load(plummer_sphere(64, np.random.default_rng(2)))
    eng.step(1)
    eng.system.vel[5, 0] = np.nan  # a NaN would put every star on the finest level: 2^30 blocks
    before = eng.system.pos.copy(), eng.time, eng.steps_done
    out = {}

    def run():
        try:
            eng.step(1)
        except EngineError as exc:
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(120)  # a generous bound: the step takes milliseconds
    assert not worker.is_alive(), "the step hung"
    assert "non-finite" in str(out["error"]) and "increase eps" in str(out["error"])
    np.testing.assert_array_equal(eng.system.pos, before[0])
    assert (eng.time, eng.steps_done) == before[1:]
