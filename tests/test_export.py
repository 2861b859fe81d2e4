"""The Gadget-4 export (`run --out x.hdf5 --format gadget4`, `sim.save(..., format="gadget4")`):
read back by galaxyview exactly, by pynbody and yt as it is, in kpc, Msun and km/s."""
import h5py
import numpy as np
import pytest

from galaxyview.cli.main import main
from galaxyview.errors import SnapshotError
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import UnitSystem
from galaxyview.snapshots import read
from galaxyview.snapshots.export import write_gadget4
from galaxyview.snapshots.gadget import MSUN_G

UNITS = UnitSystem(2.0, 3e9)  # not Gadget's: the file's kpc, Msun, km/s are conversions


def galaxy_state(n=300, seed=7):
    rng = np.random.default_rng(seed)
    state = ParticleState(rng.normal(size=(n, 3)) * 10, rng.normal(size=(n, 3)),
                          rng.uniform(0.1, 1, n), rng.choice(list(Component), n),
                          rng.integers(0, 2, n), time=3.0, radius=rng.uniform(0, 1e-3, n))
    state.meta["galaxies"] = ["primary", "secondary"]
    return state


@pytest.fixture
def exported(tmp_path):
    state = galaxy_state()
    return state, write_gadget4(tmp_path / "snap_000.hdf5", state, UNITS)


def test_galaxyview_reads_its_export_back_exactly(exported):
    state, path = exported
    snap = read(path)
    assert snap.format == "gadget-hdf5" and snap.units == UNITS
    for name in ("pos", "vel", "mass", "component", "galaxy", "radius"):
        assert np.array_equal(getattr(snap.state, name), getattr(state, name)), name
    assert snap.state.time == state.time and snap.state.meta["galaxies"] == ["primary",
                                                                             "secondary"]
    with h5py.File(path) as f:  # the layout any Gadget reader expects
        h = f["Header"].attrs
        assert list(h["NumPart_ThisFile"]) == list(h["NumPart_Total"])
        assert h["NumPart_ThisFile"].sum() == state.n and h["NumFilesPerSnapshot"] == 1
        assert h["Redshift"] == 0 and h["BoxSize"] > 0 and list(h["MassTable"]) == [0] * 6
        halo = f["PartType1"]
        assert np.all(halo["GalaxyviewComponent"][()] == Component.HALO)
        assert halo["Coordinates"].attrs["length_scaling"] == 1
        assert halo["Velocities"].attrs["to_cgs"] == 1e5
        assert "U_L exponent" in halo["Masses"].attrs


def test_pynbody_loads_the_export_in_physical_units(exported):
    pynbody = pytest.importorskip("pynbody")
    state, path = exported
    sim = pynbody.load(str(path))
    assert len(sim) == state.n
    order = np.argsort(np.asarray(sim["iord"]))
    assert np.allclose(sim["pos"].in_units("kpc")[order], state.pos * 2.0, rtol=1e-6)
    assert np.allclose(sim["vel"].in_units("km s**-1")[order], state.vel * UNITS.velocity_kms,
                       rtol=1e-6)
    grams = state.mass.astype(np.float64) * 3e9 * MSUN_G  # (pynbody's Msol differs by 2.5e-4)
    assert np.allclose(sim["mass"].in_units("g")[order], grams, rtol=1e-6)
    assert np.array_equal(np.asarray(sim["GalaxyviewComponent"])[order], state.component)
    assert len(sim.dm) == np.isin(state.component, [Component.HALO, Component.DISK,
                                                    Component.BULGE]).sum()


@pytest.mark.slow  # (importing yt and indexing the file: 5-8 s on 2 cores)
def test_yt_loads_the_export_in_kpc_and_msun(exported):
    yt = pytest.importorskip("yt")
    state, path = exported
    ds = yt.load(str(path))
    data = ds.all_data()
    order = np.argsort(data["all", "ParticleIDs"].v)
    assert np.allclose(data["all", "particle_position"].to("kpc").v[order], state.pos * 2.0,
                       rtol=1e-6)
    assert np.allclose(data["all", "particle_mass"].to("Msun").v[order], state.mass * 3e9,
                       rtol=1e-6)
    assert np.allclose(data["all", "particle_velocity"].to("km/s").v[order],
                       state.vel * UNITS.velocity_kms, rtol=1e-6)
    assert float(ds.current_time.to("Myr")) == pytest.approx(3.0 * UNITS.time_myr, rel=1e-6)


def test_export_needs_a_unit_system_and_asks_before_replacing(tmp_path, exported):
    state, path = exported
    with pytest.raises(SnapshotError, match="no physical unit system"):
        write_gadget4(tmp_path / "nbody.hdf5", state, None)
    with pytest.raises(SnapshotError, match="already exists"):
        write_gadget4(path, state, UNITS)
    assert not (tmp_path / "nbody.hdf5").exists()


SCENE = """
[scene]
name = "unit plummer"
description = "a Plummer sphere in galaxy units"
seed = 3
n_cpu = 200
n_gpu = 200
[units]
length_kpc = 2.0
mass_1e10msun = 0.3
[model]
type = "plummer"
"""


def test_run_out_format_gadget4(tmp_path, capsys):
    scene = tmp_path / "scene.toml"
    scene.write_text(SCENE)
    out = tmp_path / "end.hdf5"
    code = main(["run", str(scene), "--steps", "2", "--backend", "reference", "--out", str(out),
                 "--format", "gadget4"])
    assert code == 0, capsys.readouterr().err
    snap = read(out)
    assert snap.format == "gadget-hdf5" and snap.units == UnitSystem(2.0, 3e9)
    assert snap.state.n == 200 and snap.state.time > 0
    assert main(["run", str(scene), "--format", "gadget4"]) != 0
    assert "give --out" in capsys.readouterr().err
    code = main(["run", "plummer", "--n", "64", "--steps", "1", "--backend", "reference",
                 "--out", str(tmp_path / "p.hdf5"), "--format", "gadget4"])
    assert code != 0 and "no physical unit system" in capsys.readouterr().err
    assert not (tmp_path / "p.hdf5").exists()


def test_api_save_format(tmp_path):
    import galaxyview as gv
    from galaxyview.errors import ParameterError

    scene = tmp_path / "scene.toml"
    scene.write_text(SCENE)
    with gv.open(str(scene), backend="reference") as sim:
        sim.step(1)
        path = sim.save(tmp_path / "x.hdf5", format="gadget4")
        back = read(path).state
        assert np.array_equal(back.pos, sim.positions) and back.n == 200
        with pytest.raises(ParameterError, match="format must be one of"):
            sim.save(tmp_path / "y.hdf5", format="gadget2")
        with pytest.raises(SnapshotError, match="ending in .hdf5"):
            sim.save(tmp_path / "y.tipsy", format="gadget4")
