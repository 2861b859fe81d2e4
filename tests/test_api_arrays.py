"""The Python API's particles from arrays, read-only accessors and their setters, run(until)
landing exactly on t, quantities for dt, eps and until, the conserved sums, and errors that
speak API."""
import math

import numpy as np
import pytest

import galaxyview as gv


def _cluster(n=200, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), 0.3 * rng.normal(size=(n, 3)), rng.uniform(0.5, 1.5, n) / n


# -- from arrays, and back -----------------------------------------------------------------------
def test_from_arrays_runs_saves_and_loads_the_same_arrays(tmp_path):
    pos, vel, mass = _cluster()
    galaxy = np.repeat([0, 1], 100)
    with gv.Simulation.from_arrays(pos, vel, mass, galaxy=galaxy, component=3, backend="cpu",
                                   dt=0.01, eps=0.05, theta=0.6) as sim:
        assert sim.n == 200 and sim.time == 0.0 and sim.params.theta == 0.6
        assert np.array_equal(sim.positions, pos.astype(np.float32))
        assert np.array_equal(sim.masses, mass.astype(np.float32))
        state = sim.state()
        assert np.array_equal(state.galaxy, galaxy) and (state.component == 3).all()
        sim.run(until=0.05)
        path = sim.save(tmp_path / "end.h5")
        x, v, m = sim.positions, sim.velocities, sim.masses
        sim.step(3)
        later = sim.positions
    snap = gv.load(path)
    assert snap.time == 0.05
    for a, b in ((snap.state.pos, x), (snap.state.vel, v), (snap.state.mass, m)):
        assert a.dtype == b.dtype and np.array_equal(a, b)  # bit for bit
    assert np.array_equal(snap.state.galaxy, galaxy)
    with gv.open(path, backend="cpu") as again:  # the restart continues bit for bit
        again.step(3)
        assert np.array_equal(again.positions, later)


def test_from_arrays_on_the_reference_engine_and_reset():
    pos, vel, mass = _cluster(64)
    with gv.Simulation.from_arrays(pos, vel, mass, backend="reference", dt=0.01) as sim:
        assert sim.backend == "reference"
        sim.step(2)
        sim.reset()
        assert sim.time == 0.0 and np.array_equal(sim.velocities, vel.astype(np.float32))


@pytest.mark.parametrize("change, words", [
    (dict(pos=np.zeros((4, 2))), ["pos must have shape (N, 3)", "(4, 2)"]),
    (dict(pos=np.zeros((0, 3)), vel=np.zeros((0, 3)), mass=np.zeros(0)), ["N >= 1"]),
    (dict(vel=np.zeros((3, 3))), ["vel must have the shape of pos, (4, 3)", "(3, 3)"]),
    (dict(mass=np.ones(5)), ["mass must have shape (4,)", "(5,)"]),
    (dict(pos=[["a", "b", "c"]] * 4), ["pos must hold real numbers", "<U1"]),
    (dict(mass=[1, 1j, 1, 1]), ["mass must hold real numbers", "complex"]),
    (dict(vel=[[0, 0]] + [[0, 0, 0]] * 3), ["vel must be an array of numbers"]),
    (dict(pos=np.array([[0, 0, 0], [np.nan, 0, 0], [1, 1, 1], [2, 2, 2]])),
     ["pos holds NaN or infinite values", "first at particle 1", "finite"]),
    (dict(mass=[1, 1, 0, 1]), ["mass must be > 0", "particle 2 has 0"]),
    (dict(mass=[1, -1, 1, 1]), ["mass must be > 0", "particle 1 has -1"]),
    (dict(mass=[1, 1, 1, 1e39]), ["within float32", "particle 3"]),
    (dict(mass=[1e-50, 1, 1, 1]), ["within float32", "particle 0"]),
    (dict(pos=np.full((4, 3), 1e20)), ["pos of particle 0", "below 1e+18"]),
    (dict(component=9), ["component must be whole numbers in 0..5"]),
    (dict(galaxy=np.zeros(3, int)), ["galaxy must be whole numbers", "shape (4,)"]),
    (dict(time="0"), ["time must be a finite number"]),
    (dict(units="kpc"), ["units must be a galaxyview.UnitSystem"]),
    (dict(backend="cuda"), ["backend must be one of"]),
    (dict(dt=-1.0), ["dt must be a positive number"]),
    (dict(integrator="rk4"), ["unknown integrator 'rk4'"]),
])
def test_from_arrays_checks_every_value(change, words):
    args = dict(pos=np.arange(12.0).reshape(4, 3), vel=np.zeros((4, 3)), mass=np.ones(4),
                backend="reference")
    args.update(change)
    with pytest.raises(gv.ParameterError) as info:
        gv.Simulation.from_arrays(**args)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_add_before_the_first_step_only():
    pos, vel, mass = _cluster(50)
    with gv.Simulation.from_arrays(pos, vel, mass, backend="cpu", dt=0.01) as sim:
        sim.add([10.0, 0, 0], mass=0.5)  # one particle, at rest
        sim.add(pos=np.ones((2, 3)), vel=np.full((2, 3), 0.1), mass=[0.1, 0.2], galaxy=7)
        assert sim.n == 53
        assert np.array_equal(sim.positions[50], [10, 0, 0]) and sim.masses[50] == 0.5
        assert np.array_equal(sim.velocities[50], [0, 0, 0])
        assert np.array_equal(sim.state().galaxy[51:], [7, 7])
        e = sim.energies()
        assert e.potential < 0 and math.isfinite(e.total)
        with pytest.raises(gv.ParameterError, match="add needs mass="):
            sim.add([0.0, 0, 0])
        with pytest.raises(gv.ParameterError, match="mass must be > 0"):
            sim.add([0.0, 0, 0], mass=0)
        sim.step(1)
        with pytest.raises(gv.ParameterError, match="before the first step: this simulation "
                                                    "has run 1 steps"):
            sim.add([0.0, 0, 0], mass=1.0)
        assert sim.n == 53
        sim.reset()  # back to the start, the added particles included
        assert sim.n == 53 and sim.masses[50] == 0.5
        sim.add([0.0, 0, 20], mass=1.0)
        assert sim.n == 54


def test_add_to_a_scene():
    with gv.open("plummer", backend="cpu", n=64) as sim:
        sim.add([5.0, 0, 0], [0, 0.3, 0], 0.1)
        assert sim.n == 65 and sim.masses[-1] == np.float32(0.1)


# -- read-only accessors and setters -------------------------------------------------------------
@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_accessors_are_read_only_and_setters_reach_the_engine(backend):
    pos, vel, mass = _cluster(64)
    with gv.Simulation.from_arrays(pos, vel, mass, backend=backend, dt=0.01) as sim:
        for name in ("positions", "velocities", "masses"):
            a = getattr(sim, name)
            before = a.copy()
            writes = [lambda: a.__setitem__(0, 0.5), lambda: a.__setitem__(slice(None), 0),
                      lambda: np.add(a, 1, out=a), lambda: np.multiply(a[:3], 2, out=a[:3])]
            for write in writes:
                with pytest.raises(gv.ParameterError, match=f"sim.{name} is a read-only copy"
                                                            f".*sim.{name} = a"):
                    write()
            with pytest.raises(ValueError, match="read-only"):
                a *= 2
            assert np.array_equal(getattr(sim, name), before)  # nothing reached the engine
            assert type(a * 2) is np.ndarray and float(a.sum()) == float(before.sum())
            own = a.copy()
            own[0] = 0.25  # a copy is the user's own
            assert own[0].min() == 0.25
        e0 = sim.energies()
        m = sim.masses.copy()
        m[0] = 0.5
        sim.masses = m
        assert sim.masses[0] == 0.5 and np.array_equal(sim.masses[1:], m[1:])
        assert sim.energies().potential != e0.potential  # the forces know the new mass
        x = sim.positions.copy()
        x[1] += 1.0
        sim.positions = x
        assert np.array_equal(sim.positions, x)
        sim.velocities = np.zeros((64, 3))
        assert sim.energies().kinetic == 0.0
        assert sim.initial.mass[0] == 0.5  # changed before the first step: the start
        sim.step(2)
        assert sim.engine.steps_done == 2 and sim.masses[0] == 0.5
        sim.masses = np.full(64, 0.01)  # mid-run too: the step count and time stay
        assert sim.engine.steps_done == 2 and sim.time == pytest.approx(0.02)
        assert sim.initial.mass[0] == 0.5
        with pytest.raises(gv.ParameterError, match="mass must have shape \\(64,\\)"):
            sim.masses = np.ones(63)
        with pytest.raises(gv.ParameterError, match="pos holds NaN"):
            sim.positions = np.full((64, 3), np.nan)
        assert (sim.masses == np.float32(0.01)).all()


def test_setters_keep_the_cpu_engines_float64_state():
    pos, vel, mass = _cluster(64)
    with gv.Simulation.from_arrays(pos, vel, mass, backend="cpu", dt=0.01) as sim:
        sim.step(3)
        exact = sim.engine.exact_state()
        sim.masses = sim.masses  # the same masses: the same float64 state and forces
        again = sim.engine.exact_state()
        assert np.array_equal(exact.pos, again.pos) and np.array_equal(exact.vel, again.vel)
        assert np.array_equal(exact.acc, again.acc)


# -- run(until) ----------------------------------------------------------------------------------
def test_run_lands_exactly_on_the_time_asked():
    rng = np.random.default_rng(3)
    with gv.open("plummer", backend="cpu", n=64, dt=0.01) as sim:
        for until in [0.1, 0.1037, 0.3, 0.7000000000000001, 1.0, *np.cumsum(rng.uniform(
                0.001, 0.05, 12)) + 1.0]:
            sim.run(until=until)
            assert sim.time == until
            assert sim.params.dt == 0.01  # the shortened step's dt is not kept
        steps = sim.engine.steps_done
        sim.run(until=sim.time)  # already there: nothing
        assert sim.engine.steps_done == steps
        with pytest.raises(gv.ParameterError, match="before the current time"):
            sim.run(until=0.5)


def test_run_over_whole_steps_is_whole_steps():
    with gv.open("plummer", backend="cpu", n=64, dt=1 / 64) as a, \
            gv.open("plummer", backend="cpu", n=64, dt=1 / 64) as b:
        a.run(until=10 / 64)
        b.step(10)
        assert a.engine.steps_done == 10 and np.array_equal(a.positions, b.positions)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_a_shortened_last_step_conserves_energy_as_whole_steps(backend):
    errors, ends = {}, {}
    for until in (0.25, 0.255, 0.26):
        with gv.open("plummer", backend=backend, n=256, dt=0.01) as sim:
            e0 = sim.energies().total
            sim.run(until=until)
            assert sim.time == until
            errors[until] = abs(sim.energies().total / e0 - 1)
            ends[until] = sim.positions
    assert errors[0.255] <= 2 * max(errors[0.25], errors[0.26]) + 1e-7, errors
    # between the two whole-step ends, nearer neither by more than the half step's motion
    assert np.abs(ends[0.255] - ends[0.25]).max() < np.abs(ends[0.26] - ends[0.25]).max()


def test_the_cpu_engines_shortened_step_is_the_reference_engines():
    ends = {}
    for backend in ("cpu", "reference"):
        with gv.open("plummer", backend=backend, n=256, dt=0.01) as sim:
            sim.run(until=0.2537)
            ends[backend] = sim.positions
    assert np.abs(ends["cpu"] - ends["reference"]).max() < 1e-4


@pytest.mark.parametrize("integrator", ["hermite4", "leapfrog-hier"])
def test_block_step_integrators_synchronise_at_the_time_asked(integrator):
    with gv.open("plummer", backend="cpu", n=64, dt=1 / 16, eps=0.05,
                 integrator=integrator) as sim:
        e0 = sim.energies().total
        sim.run(until=0.3)
        assert sim.time == 0.3 and sim.params.dt == 1 / 16
        assert abs(sim.energies().total / e0 - 1) < 1e-3
        sim.run(until=0.5)  # the steps after it go on with dt
        assert sim.time == 0.5 and abs(sim.energies().total / e0 - 1) < 1e-3


def test_run_on_a_stored_run_moves_through_its_snapshots(tmp_path):
    from galaxyview.snapshots.archive import ArchiveWriter

    with gv.open("plummer", backend="cpu", n=64, dt=0.01) as sim:
        writer = ArchiveWriter(tmp_path / "run.h5", sim.run_info())
        for _ in range(4):
            writer.append(sim.engine.exact_state())
            sim.step(3)
        writer.close()
    with gv.open(tmp_path / "run.h5", backend="cpu") as sim:  # 0, 0.03, 0.06, 0.09
        sim.run(until=0.04)
        assert sim.time == pytest.approx(0.06)  # the first stored at or after 0.04
        sim.run(until=5.0)
        assert sim.time == pytest.approx(0.09)  # the last
        with pytest.raises(gv.ParameterError, match="cannot add particles: .*plays back"):
            sim.add([0.0, 0, 0], mass=1.0)
        with pytest.raises(gv.ParameterError, match="cannot change the particles"):
            sim.masses = sim.masses


# -- quantities ----------------------------------------------------------------------------------
def test_quantities_in_and_out():
    u = pytest.importorskip("astropy.units")
    pos, vel, mass = _cluster(32)
    units = gv.UnitSystem(length_kpc=2.0, mass_msun=1e9)
    with gv.Simulation.from_arrays(pos * 2 * u.kpc, vel * units.velocity_kms * u.km / u.s,
                                   mass * 1e9 * u.Msun, units=units, backend="cpu",
                                   dt=units.time_myr / 100 * u.Myr, eps=100 * u.pc) as sim:
        assert sim.units == units
        assert np.allclose(sim.positions, pos, rtol=1e-6)
        assert np.allclose(sim.velocities, vel, rtol=1e-6)
        assert np.allclose(sim.masses, mass, rtol=1e-6)
        assert sim.params.dt == pytest.approx(0.01) and sim.params.eps == pytest.approx(0.05)
        sim.params = {"dt": 2 * units.time_myr / 100 * u.Myr, "eps": 0.2 * u.kpc}
        assert sim.params.dt == pytest.approx(0.02) and sim.params.eps == pytest.approx(0.1)
        until = 0.05 * units.time_myr * u.Myr
        sim.run(until=until)
        assert sim.time == until.to_value(u.Myr) / units.time_myr  # exactly
        with pytest.raises(gv.ParameterError, match="dt must be a time .*Myr"):
            sim.params = {"dt": 1 * u.kpc}
        with pytest.raises(gv.ParameterError, match="before the first step"):
            sim.add(np.zeros(3) * u.kpc, mass=1e9 * u.Msun)
    with gv.Simulation.from_arrays(pos * u.kpc, vel * u.km / u.s, mass * u.Msun,
                                   backend="reference") as sim:  # quantities: kpc, 1e10 Msun
        assert sim.units == gv.UnitSystem()
        sim.add([0, 0, 1] * u.Mpc, mass=1e10 * u.Msun)
        assert sim.positions[-1, 2] == 1000 and sim.masses[-1] == 1


def test_quantity_dt_and_eps_for_a_scene_with_units():
    u = pytest.importorskip("astropy.units")
    with gv.open("milky-way", backend="cpu", n=200, dt=1 * u.Myr, eps=50 * u.pc) as sim:
        assert sim.params.dt == pytest.approx(1 / sim.units.time_myr)
        assert sim.params.eps == pytest.approx(0.05 / sim.units.length_kpc)
    with pytest.raises(gv.ParameterError, match="dt is a quantity .*plummer has no physical "
                                                "units: give dt in N-body units"):
        gv.open("plummer", backend="cpu", n=64, dt=1 * u.Myr)
    with pytest.raises(gv.ParameterError, match="eps must be a length"):
        gv.open("milky-way", backend="cpu", n=200, eps=1 * u.Myr)
    with pytest.raises(gv.ParameterError, match="until must be a time"):
        with gv.open("milky-way", backend="cpu", n=200) as sim:
            sim.run(until=1 * u.kpc)


# -- conserved sums ------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_momentum_angular_momentum_and_centre_of_mass(backend):
    with gv.open("antennae", backend=backend, n=300, dt=0.01) as sim:
        sim.step(2)
        x = sim.positions.astype(np.float64)
        v = sim.velocities.astype(np.float64)
        m = sim.masses.astype(np.float64)
        p = (m[:, None] * v).sum(axis=0)
        ell = (m[:, None] * np.cross(x, v)).sum(axis=0)
        # the sums nearly cancel: round-off is relative to the sums of magnitudes
        scale_p = (m * np.linalg.norm(v, axis=1)).sum()
        scale_l = (m * np.linalg.norm(x, axis=1) * np.linalg.norm(v, axis=1)).sum()
        assert sim.momentum.dtype == np.float64 and sim.momentum.shape == (3,)
        assert np.allclose(sim.momentum, p, rtol=0, atol=1e-13 * scale_p)
        assert np.allclose(sim.angular_momentum, ell, rtol=0, atol=1e-13 * scale_l)
        centre, velocity = sim.centre_of_mass
        assert np.allclose(centre, (m[:, None] * x).sum(axis=0) / m.sum(), rtol=0,
                           atol=1e-13 * (m * np.linalg.norm(x, axis=1)).sum() / m.sum())
        assert np.allclose(velocity, p / m.sum(), rtol=0, atol=1e-13 * scale_p / m.sum())
        assert np.abs(sim.momentum).max() > 1e-9 * scale_p  # not all zero by construction
        assert sim.centre_of_mass.position.shape == (3,)


# -- errors that speak the API -------------------------------------------------------------------
def test_engine_errors_name_api_arguments_not_flags(monkeypatch):
    import galaxyview.engines as engines

    monkeypatch.setattr(engines, "gpu_unavailable_reason", lambda device=0: "no CUDA device")
    with pytest.raises(gv.EngineError) as info:
        gv.open("plummer", backend="gpu", n=64)
    text = str(info.value)
    assert 'backend="gpu": no CUDA device; use backend="cpu"' in text and "--" not in text
    with pytest.raises(gv.EngineError) as info:
        gv.Simulation.from_arrays(np.zeros((1, 3)), None, 1.0, backend="gpu")
    assert 'use backend="cpu"' in str(info.value) and "--" not in str(info.value)
    with pytest.raises(gv.EngineError) as info:
        gv.open("plummer", backend="cpu", n=64, device=1)
    text = str(info.value)
    assert "device=1 chooses a GPU" in text and 'backend="gpu"' in text and "--" not in text
    assert "GALAXYVIEW_THREADS" in text
    with pytest.raises(gv.ParameterError) as info:
        gv.open("antennae", backend="cpu", n=3)
    assert "(n=)" in str(info.value) and "--n" not in str(info.value)


def test_engine_errors_after_opening_name_api_arguments(monkeypatch):
    """An engine refusing particles later (the GPU's memory full) or a reset speaks the API
    too, not only opening."""
    from galaxyview.errors import EngineError

    def full(*args, **kwargs):
        raise EngineError("the GPU's memory holds no more particles; use fewer particles or "
                          "--backend cpu")

    with gv.Simulation.from_arrays(np.eye(3), None, 1.0, backend="reference") as sim:
        monkeypatch.setattr(sim.engine, "load_exact", full)
        monkeypatch.setattr(sim.engine, "load", full)
        for change in (lambda: setattr(sim, "positions", 2 * np.eye(3)), sim.reset,
                       lambda: sim.add([0.5, 0.5, 0.5], mass=1.0)):
            with pytest.raises(EngineError) as info:
                change()
            assert 'use fewer particles or backend="cpu"' in str(info.value)


@pytest.mark.gpu
def test_the_api_from_arrays_on_the_gpu_engine():
    """from_arrays, run(until) landing exactly, the setters and the sums on the GPU engine,
    against the CPU engine from the same arrays."""
    pos, vel, mass = _cluster(4096, seed=5)
    runs = {}
    for backend in ("gpu", "cpu"):
        with gv.Simulation.from_arrays(pos, vel, mass, backend=backend, dt=0.01, eps=0.05,
                                       theta=0.5) as sim:
            sim.run(until=0.0537)
            assert sim.time == 0.0537
            p = sim.momentum
            heavier = sim.masses.copy()
            heavier[:10] *= 2
            sim.masses = heavier
            assert np.array_equal(sim.masses, heavier)
            with pytest.raises(ValueError, match="assign a whole array"):
                sim.positions[0] = 0.0
            runs[backend] = (sim.positions, p, sim.centre_of_mass)
    (xg, pg, cg), (xc, pc, cc) = runs["gpu"], runs["cpu"]
    assert np.abs(xg - xc).max() < 1e-3  # the tree's error over six steps
    assert np.allclose(pg, pc, atol=1e-5) and np.allclose(cg[0], cc[0], atol=1e-4)
