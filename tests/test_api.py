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
