"""The CPU engine behind the Engine interface."""
import numpy as np
import pytest

from galaxyview.engines import PHASES, create_engine
from galaxyview.engines.cpu import CPUEngine
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.errors import EngineError, ParameterError
from galaxyview.model import diagnostics as dg
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState, Selection


@pytest.fixture(scope="module")
def sphere():
    s = plummer_sphere(3000, np.random.default_rng(21))
    s.component[:1000] = Component.HALO
    s.galaxy[1500:] = 1
    s.meta["name"] = "test sphere"
    return s


def test_identity_and_factory():
    eng, why = create_engine("reference", Params())
    assert type(eng) is CPUEngine and eng.name == "reference"
    assert eng.device_name == "CPU (numpy)" and "CPU" in why
    assert eng.n == 0 and eng.tree is None


def test_accelerations_in_the_loaded_order(sphere):
    eng = CPUEngine(Params(theta=0.5, eps=0.05))
    eng.load(sphere)
    acc, pot = eng.accelerations()
    ref_a, ref_p = direct_forces(sphere.pos, sphere.mass, 0.05)
    assert acc.shape == (3000, 3) and pot.shape == (3000,) and acc.dtype == np.float64
    assert dg.force_error_percentiles(acc, ref_a, (99,))[0] < 1e-2
    assert np.median(np.abs(pot - ref_p) / np.abs(ref_p)) < 1e-4
    # a shuffled copy gives the same forces, shuffled alike
    perm = np.random.default_rng(0).permutation(3000)
    shuffled = ParticleState(sphere.pos[perm], sphere.vel[perm], sphere.mass[perm])
    eng2 = CPUEngine(Params(theta=0.5, eps=0.05))
    eng2.load(shuffled)
    acc2, pot2 = eng2.accelerations()
    assert np.allclose(acc2, acc[perm], rtol=1e-5, atol=1e-6 * np.abs(acc).max())
    assert np.allclose(pot2, pot[perm], rtol=1e-6)


def test_stats_tree_and_phases(sphere):
    eng = CPUEngine(Params(theta=0.6))
    eng.load(sphere)
    st = eng.stats
    assert set(st.timings_ms) == set(PHASES) and st.n == 3000
    assert all(v >= 0 for v in st.timings_ms.values()) and st.timings_ms["walk"] > 0
    assert st.pp >= 3000 and st.pc > 0 and st.pp_per_particle == st.pp / 3000
    assert eng.tree.n == 3000 and eng.tree.body_count[0] == 3000
    eng.step(2)
    assert eng.stats.timings_ms["integrate"] > 0 and eng.steps_done == 2
    assert eng.stats.step_ms == pytest.approx(sum(eng.stats.timings_ms.values()))


def test_state_round_trip_and_time(sphere):
    eng = CPUEngine(Params(dt=0.01))
    eng.load(sphere)
    sphere_pos = sphere.pos.copy()
    sphere.pos[:] += 100  # the engine holds its own copy
    try:
        eng.step(3)
    finally:
        sphere.pos[:] = sphere_pos
    out = eng.state()
    assert eng.time == pytest.approx(0.03) and out.time == pytest.approx(0.03)
    assert out.pos.dtype == np.float32 and out.n == 3000
    assert np.array_equal(out.component, sphere.component)
    assert np.array_equal(out.galaxy, sphere.galaxy) and out.meta["name"] == "test sphere"
    assert 0 < np.abs(out.pos - sphere.pos).max() < 0.1


def test_changing_theta_or_eps_recomputes_the_forces(sphere):
    eng = CPUEngine(Params(theta=0.4, eps=0.05))
    eng.load(sphere)
    acc0, pot0 = eng.accelerations()
    pc0 = eng.stats.pc
    eng.set_params(theta=0.9)
    acc1, _ = eng.accelerations()
    assert eng.stats.pc != pc0 and not np.array_equal(acc0, acc1)
    eng.set_params(eps=0.2)
    _, pot2 = eng.accelerations()
    assert np.all(pot2 > pot0)  # more softening: a shallower potential
    before = eng.stats
    eng.set_params(dt=0.001)  # no force change, no recomputation
    assert eng.stats is before and eng.params.dt == 0.001
    with pytest.raises(ParameterError, match="theta"):
        eng.set_params(theta=-1)


def test_energies_match_diagnostics(sphere):
    eng = CPUEngine(Params(eps=0.05), gravity="direct")
    eng.load(sphere)
    e = eng.energies()
    _, pot = direct_forces(sphere.pos, sphere.mass, 0.05)
    assert e.kinetic == pytest.approx(dg.kinetic_energy(sphere.vel, sphere.mass), rel=1e-12)
    assert e.potential == pytest.approx(dg.potential_energy(sphere.mass, pot), rel=1e-12)
    assert e.total == pytest.approx(-0.25, abs=0.02)
    assert eng.stats.pp == 3000**2 and eng.stats.pc == 0 and eng.tree is None


def test_non_finite_step_raises_and_keeps_the_state():
    s = ParticleState(np.array([[0, 0, 0], [1, 0, 0]], np.float32),
                      np.array([[0, 0, 0], [1e17, 0, 0]], np.float32), np.ones(2, np.float32))
    eng = CPUEngine(Params(dt=1e30, eps=0.1))  # the drift takes x beyond float32
    eng.load(s)
    with pytest.raises(EngineError, match=r"step 1: positions became infinite; reduce dt"):
        eng.step(5)
    assert eng.time == 0 and eng.steps_done == 0
    assert np.array_equal(eng.state().pos, s.pos)


def test_bad_use_gets_a_message():
    eng = CPUEngine()
    with pytest.raises(EngineError, match="load"):
        eng.step()
    with pytest.raises(EngineError, match="load"):
        eng.accelerations()
    empty = ParticleState(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(EngineError, match="no particles"):
        eng.load(empty)
    eng.load(plummer_sphere(10, np.random.default_rng(1)))
    with pytest.raises(EngineError, match="whole number"):
        eng.step(-1)
    with pytest.raises(ValueError, match="gravity"):
        CPUEngine(gravity="fmm")


def test_centre_of_mass_of_a_selection():
    state = plummer_sphere(500, np.random.default_rng(3))
    state.mass[:100] *= 4.0
    engine = CPUEngine(Params(theta=0.75))
    engine.load(state)
    engine.step(2)
    mask = np.arange(500) % 7 == 0
    now = engine.state()
    m = now.mass[mask].astype(np.float64)
    np.testing.assert_allclose(engine.centre_of_mass(mask),
                               m @ now.pos[mask].astype(np.float64) / m.sum(), rtol=1e-12)
    assert not np.allclose(engine.centre_of_mass(mask), now.pos[mask].mean(axis=0))
    now.component[:] = np.arange(500) % 3  # disk, bulge, halo
    now.galaxy[:] = np.arange(500) % 2
    engine.load(now)
    core = Selection(1, (Component.BULGE, Component.HALO))  # by what particles are, not index
    picked = core.mask(now.component, now.galaxy)
    assert picked.sum() == np.sum((np.arange(500) % 2 == 1) & (np.arange(500) % 3 > 0))
    assert np.array_equal(engine.centre_of_mass(core), engine.centre_of_mass(picked))
    assert Selection().mask(now.component, now.galaxy).all()
