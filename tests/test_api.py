"""The Python API: galaxyview.open / load, checked arguments, the context manager."""
import numpy as np
import pytest

import galaxyview as gv


def test_open_step_run_and_read_back(tmp_path):
    with gv.open("plummer", backend="cpu", n=1e3, dt=0.01) as sim:
        assert sim.n == 1000 and sim.params.dt == 0.01
        e0 = sim.energies().total
        sim.step(5)
        assert sim.time == pytest.approx(0.05)
        sim.run(until=0.1)
        assert sim.time == pytest.approx(0.1)
        assert sim.positions.shape == (1000, 3) and sim.velocities.dtype == np.float32
        assert abs(sim.energies().total / e0 - 1) < 1e-3
        sim.params = {"eps": 0.1}
        assert sim.params.eps == 0.1
        path = sim.save(tmp_path / "end.h5")
        positions = sim.positions
    snap = gv.load(path)
    assert snap.format == "galaxyview" and snap.params["eps"] == 0.1
    assert np.array_equal(snap.state.pos, positions)


@pytest.mark.parametrize("kwargs, words", [
    (dict(dt="0.01"), ["dt must be a number", "str"]),
    (dict(theta=True), ["theta must be a number"]),
    (dict(eps=1e300), ["eps", "float32"]),
    (dict(n="100"), ["n must be a whole number"]),
    (dict(n=10.5), ["n must be a whole number"]),
    (dict(backend="cuda"), ["backend must be one of"]),
    (dict(integrator=3), ["integrator must be a module name"]),
    (dict(integrator="foo"), ["unknown integrator 'foo'", "leapfrog, hermite4"]),
    (dict(collision="spheres"), ["unknown collision 'spheres'", "hard-spheres"]),
    (dict(playback="x"), ["playback must be True, False or None", "'x'"]),
    (dict(playback=1), ["playback must be True, False or None"]),
    (dict(index="a"), ["index must be a whole number (a snapshot's position; negative counts "
                       "from the end), got 'a'"]),
    (dict(index=1.5), ["index must be a whole number (a snapshot's position"]),
])
def test_bad_arguments_fail_at_the_call(kwargs, words):
    with pytest.raises(gv.ParameterError) as info:
        gv.open("plummer", **{"backend": "cpu", "n": 64, **kwargs})
    for word in words:
        assert word in str(info.value)


def test_bad_values_while_running_are_the_programs_errors():
    with gv.open("plummer", backend="cpu", n=64) as sim:
        with pytest.raises(gv.ParameterError, match="dt must be a number"):
            sim.params = {"dt": "0.1"}
        with pytest.raises(gv.ParameterError, match="only theta, dt and eps"):
            sim.params = {"G": 2.0}
        with pytest.raises(gv.ParameterError, match="whole number"):
            sim.step(1.5)
        with pytest.raises(gv.ParameterError, match="until must be a number"):
            sim.run(until="1")
        with pytest.raises(gv.GalaxyviewError, match="give a name ending in"):
            sim.save("state.txt")
    with pytest.raises(gv.SnapshotError, match="no such file"):
        gv.load("does-not-exist.h5")


@pytest.mark.slow
def test_physical_units_on_request():
    astropy_units = pytest.importorskip("astropy.units")
    with gv.open("milky-way", backend="cpu", n=200) as sim:
        pos = sim.quantity("positions")
        assert pos.unit == astropy_units.kpc
        assert np.allclose(pos.value, sim.positions * sim.units.length_kpc)
        sim.run(until=2 * sim.params.dt * sim.units.time_myr * astropy_units.Myr)
        assert sim.engine.steps_done == 2
    with gv.open("plummer", backend="cpu", n=64) as sim:
        with pytest.raises(gv.ParameterError, match="no \\[units\\]"):
            sim.quantity("positions")


def test_save_names_what_it_accepts_and_the_apis_overwrite(tmp_path):
    with gv.open("plummer", backend="cpu", n=64) as sim:
        with pytest.raises(gv.ParameterError, match="path must be a file path") as info:
            sim.save(None)
        assert ".h5" in str(info.value) and ".tipsy" in str(info.value)
        for name in ("end.h5", "end.tipsy"):
            path = sim.save(tmp_path / name)
            before = path.read_bytes()
            sim.step(1)
            with pytest.raises(gv.SnapshotError, match="overwrite=True") as info:
                sim.save(path)
            assert "--overwrite" not in str(info.value)
            with pytest.raises(gv.ParameterError, match="overwrite must be True or False"):
                sim.save(path, overwrite="x")
            assert path.read_bytes() == before  # refused: nothing replaced
            sim.save(path, overwrite=True)
            assert path.read_bytes() != before


def test_a_closed_simulation_says_so():
    with gv.open("plummer", backend="cpu", n=64) as sim:
        sim.step(1)
    sim.close()  # a second close does nothing
    calls = {"step": lambda: sim.step(1), "run": lambda: sim.run(until=1.0),
             "state": sim.state, "energies": sim.energies, "reset": sim.reset,
             "save": lambda: sim.save("never.h5"), "positions": lambda: sim.positions,
             "n": lambda: sim.n, "time": lambda: sim.time, "params": lambda: sim.params,
             "set params": lambda: setattr(sim, "params", {"dt": 0.01}),
             "quantity": lambda: sim.quantity("time")}
    for what, call in calls.items():
        with pytest.raises(gv.EngineError, match="closed.*open a new one") as info:
            call()
        assert "load(state)" not in str(info.value), what
    assert sim.closed and "closed" in repr(sim)


def test_repr_is_a_one_line_summary(tmp_path):
    with gv.open("plummer", backend="cpu", n=64, dt=0.01) as sim:
        sim.step(3)
        text = repr(sim)
        assert "\n" not in text and len(text) < 120 and "array" not in text
        for word in ("plummer", "N = 64", "cpu", "t = 0.03", "3 steps"):
            assert word in text
        path = sim.save(tmp_path / "end.h5")
    with gv.open(path, backend="cpu", index=-1, playback=np.False_) as sim:
        assert str(path) in repr(sim) and "3 steps" in repr(sim)
    with pytest.raises(gv.ParameterError, match="index must be a whole number \\(a snapshot"):
        gv.load(path, index="a")
    text = repr(gv.load(path))
    assert text == f"<Snapshot {path}: galaxyview, N = 64, t = 0.03>", text
