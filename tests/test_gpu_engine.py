"""GPUEngine behaviour: stepping, energy, parameters between steps, renderer access, errors."""
import numpy as np
import pytest

from galaxyview.engines.base import PHASES
from galaxyview.errors import EngineError, ParameterError
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import Component, Selection

pytestmark = pytest.mark.gpu


@pytest.fixture()
def engine():
    from galaxyview.engines.gpu.engine import GPUEngine

    eng = GPUEngine(Params(theta=0.75, eps=0.05, dt=1 / 64))
    yield eng
    eng.close()


def energy_drift(eng, state, steps=100):
    eng.load(state)
    e0 = eng.energies().total
    eng.step(steps)
    return abs(eng.energies().total - e0) / abs(e0)


def test_energy_conserved_like_cpu(engine):
    from galaxyview.engines.cpu.engine import CPUEngine

    state = plummer_sphere(4096, np.random.default_rng(11))
    gpu = energy_drift(engine, state)
    cpu = energy_drift(CPUEngine(Params(theta=0.75, eps=0.05, dt=1 / 64)), state)
    assert gpu <= 1.5 * cpu + 2e-5, (gpu, cpu)
    assert engine.time == pytest.approx(100 / 64)


def test_energies_match_cpu_direct(engine):
    from galaxyview.engines.cpu.direct import direct_forces

    state = plummer_sphere(3000, np.random.default_rng(4))
    engine.set_params(theta=0.3)
    engine.load(state)
    e = engine.energies()
    _, pot = direct_forces(state.pos, state.mass, 0.05)
    ek = 0.5 * (state.mass * (state.vel.astype(np.float64) ** 2).sum(1)).sum()
    assert e.kinetic == pytest.approx(ek, rel=1e-6)
    assert e.potential == pytest.approx(0.5 * (state.mass * pot).sum(), rel=1e-4)


def test_step_stats_and_state(engine):
    state = plummer_sphere(50000, np.random.default_rng(8))
    state.component[:100] = 3
    engine.load(state)
    engine.step(3)
    s = engine.stats
    assert set(s.timings_ms) == set(PHASES) and all(v > 0 for v in s.timings_ms.values())
    assert s.n == state.n and s.pp > state.n and s.pc > state.n
    out = engine.state()
    assert out.time == pytest.approx(3 / 64)
    moved = np.linalg.norm(out.pos - state.pos, axis=1)
    assert 0 < moved.max() < 0.5 and np.array_equal(out.component, state.component)
    np.testing.assert_array_equal(out.mass, state.mass)


def test_params_change_between_steps(engine):
    from galaxyview.engines.gpu.engine import GPUEngine

    state = plummer_sphere(20000, np.random.default_rng(9))
    engine.load(state)
    engine.step(2)
    engine.set_params(theta=0.4, eps=0.1, dt=1 / 32)
    a1, _ = engine.accelerations()
    fresh = GPUEngine(Params(theta=0.4, eps=0.1, dt=1 / 32))
    try:
        fresh.load(engine.state())
        a2, _ = fresh.accelerations()
    finally:
        fresh.close()
    np.testing.assert_allclose(a1, a2, rtol=1e-4, atol=1e-6)
    t = engine.time
    engine.step(1)
    assert engine.time == pytest.approx(t + 1 / 32)
    with pytest.raises(ParameterError):
        engine.set_params(theta=-1)


def test_device_view_holds_current_particles(engine):
    import pycuda.driver as cuda

    state = plummer_sphere(10000, np.random.default_rng(10))
    state.component[::2] = 1
    engine.load(state)
    engine.step(1)
    view = engine.device_view()
    arrays = view.particles()
    assert arrays.n == state.n and view.ordinal == engine.ordinal
    with engine.activate():
        p4 = np.empty((state.n, 4), np.float32)
        v4 = np.empty((state.n, 4), np.float32)
        cuda.memcpy_dtoh(p4, arrays.pos4)
        cuda.memcpy_dtoh(v4, arrays.vel4)
    out = engine.state()
    key = lambda a: np.lexsort(a.T)  # noqa: E731  (order-free comparison)
    np.testing.assert_array_equal(p4[key(p4[:, :3])][:, :3], out.pos[key(out.pos)])
    np.testing.assert_array_equal(np.sort(v4[:, 3]), np.sort(state.component.astype(np.float32)))


def test_cell_arrays_grow_when_the_tree_outgrows_them(monkeypatch):
    from galaxyview.engines.gpu import buffers
    from galaxyview.engines.gpu.engine import GPUEngine

    state = plummer_sphere(30000, np.random.default_rng(12))
    ref = GPUEngine(Params())
    try:
        ref.load(state)
        ref.step(1)
        a_ref = ref.accelerations()[0]
    finally:
        ref.close()
    monkeypatch.setattr(buffers, "cell_capacity", lambda n: 64)
    eng = GPUEngine(Params())
    try:
        eng.load(state)
        eng.step(1)
        assert eng.buf.cell_cap > 30000 * 0.2
        np.testing.assert_array_equal(eng.accelerations()[0], a_ref)
    finally:
        eng.close()


def test_errors_are_clear(engine):
    import pycuda.driver as cuda

    with pytest.raises(EngineError, match="load"):
        engine.step()
    engine.load(plummer_sphere(5000, np.random.default_rng(1)))
    with engine.activate():  # corrupt one position on the device
        cuda.memcpy_htod(engine.device_view().particles().pos4 + 16 * 123,
                         np.array([np.nan, 0, 0, 1e-4], np.float32))
    with pytest.raises(EngineError, match="non-finite"):
        engine.step()


def test_create_engine_gpu():
    from galaxyview.engines import create_engine

    eng, why = create_engine("gpu", Params())
    try:
        assert eng.name == "gpu" and eng.device_name in why
    finally:
        eng.close()


@pytest.mark.parametrize("n", [1000, 65537])
def test_centre_of_mass_on_the_device_matches_the_state(engine, n):
    state = plummer_sphere(n, np.random.default_rng(5))
    state.mass[: n // 3] *= 3.0  # unequal masses, so the weighting shows
    state.component[:] = np.arange(n) % 3
    state.galaxy[:] = np.arange(n) % 2
    engine.load(state)
    engine.step(3)  # particles are now in another (sorted) order on the device
    rng = np.random.default_rng(6)
    core = Selection(1, (Component.BULGE, Component.HALO))  # found from the loaded tags
    for mask in (rng.random(n) < 0.05, np.arange(n) < n // 2, core):
        host = engine.state()
        pick = core.mask(host.component, host.galaxy) if mask is core else mask
        m = host.mass[pick].astype(np.float64)
        want = m @ host.pos[pick].astype(np.float64) / m.sum()
        got = engine.centre_of_mass(mask)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        engine.step(1)
        moved = engine.centre_of_mass(mask)  # same mask again: no new upload, new positions
        assert not np.allclose(moved, got)
    picked = core.mask(state.component, state.galaxy)  # the Selection's mask, loaded order
    np.testing.assert_allclose(engine.centre_of_mass(core), engine.centre_of_mass(picked),
                               rtol=1e-12, atol=1e-12)  # float64 atomics: any order
    with pytest.raises(ValueError, match="one entry per particle"):
        engine.centre_of_mass(np.ones(n + 1, dtype=bool))


def test_engine_runs_on_the_device_it_is_given():
    import pycuda.driver as cuda

    from galaxyview.engines import create_engine

    last = cuda.Device.count() - 1  # device 0 on a one-GPU machine, another one elsewhere
    engine, why = create_engine("gpu", Params(), device=last)
    try:
        assert f"(device {last})" in why and engine.device_view().ordinal == last
        engine.load(plummer_sphere(3000, np.random.default_rng(4)))
        engine.step(1)
        with engine.activate():
            assert cuda.Context.get_device().pci_bus_id() == cuda.Device(last).pci_bus_id()
    finally:
        engine.close()
    with pytest.raises(EngineError, match="no CUDA device 99"):
        create_engine("gpu", device=99)
