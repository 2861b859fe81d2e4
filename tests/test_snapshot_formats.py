"""Snapshot formats: galaxyview HDF5, Tipsy with its companion files (read back by pynbody),
Gadget binary and Gadget / SWIFT HDF5 written by hand here (independent writers)."""
import struct

import h5py
import numpy as np
import pytest

from galaxyview.errors import SnapshotError
from galaxyview.model.exact import ExactState
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState
from galaxyview.snapshots.tipsy import save_state
from galaxyview.model.units import UnitSystem
from galaxyview.snapshots import archive, foreign, read
from galaxyview.snapshots.gadget import KPC_CM, MSUN_G


def mixed_state(n=40, seed=3):
    rng = np.random.default_rng(seed)
    comp = rng.choice([Component.DISK, Component.BULGE, Component.HALO, Component.BLACK_HOLE],
                      n).astype(np.uint8)
    return ParticleState(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)),
                         rng.uniform(0.1, 1, n), comp, rng.integers(0, 3, n), time=1.25,
                         radius=rng.uniform(0, 0.01, n))


def test_native_round_trip_is_exact(tmp_path):
    state = mixed_state()
    rng = np.random.default_rng(0)
    exact = ExactState(state, "cpu", "tree", Params(dt=0.1, eps=0.1, theta=0.6),
                       state.pos.astype(np.float64) + 1e-12, rng.normal(size=(state.n, 3)),
                       rng.normal(size=(state.n, 3)), rng.normal(size=state.n), steps=7,
                       integrator={"levels": np.arange(state.n), "dt_max": 0.25, "tag": "x"})
    units = UnitSystem(2.0, 3e10)
    path = archive.save_exact(tmp_path / "s.h5", exact, archive.RunInfo("m", "cpu", units=units,
                                                                        scene_toml="[scene]"))
    snap = read(path)
    assert snap.format == "galaxyview" and snap.count == 1 and snap.units == units
    assert snap.params["dt"] == 0.1 and snap.params["eps"] == 0.1 and snap.run.scene_toml
    back = snap.exact
    for name in ("pos", "vel", "acc", "pot"):
        assert getattr(back, name).dtype == np.float64
        assert np.array_equal(getattr(back, name), getattr(exact, name)), name
    for name in ("pos", "vel", "mass", "radius", "component", "galaxy"):
        assert np.array_equal(getattr(back.state, name), getattr(state, name)), name
    assert back.steps == 7 and back.state.time == 1.25
    assert np.array_equal(back.integrator["levels"], np.arange(state.n))
    assert back.integrator["dt_max"] == 0.25 and back.integrator["tag"] == "x"
    with h5py.File(path) as f:  # readable without galaxyview
        assert f["snapshots/000000/pos"].dtype == np.float32
        assert np.array_equal(f["snapshots/000000/ids"][()], np.arange(state.n))


SWIFT_KEYS = ("U_L exponent", "U_M exponent", "U_t exponent", "h-scale exponent",
              "a-scale exponent", "Description")
GADGET4_KEYS = ("a_scaling", "h_scaling", "length_scaling", "mass_scaling", "velocity_scaling")
CGS = "Conversion factor to CGS (not including cosmological corrections)"


def test_galaxyview_hdf5_carries_units_and_codes(tmp_path):
    """Every dataset's units as SWIFT and Gadget-4 write them, /Units, the component codes
    and galaxy names: the numbers times the factors are the cgs values; N-body runs have the
    exponents but no factors. Reading is unchanged (the attributes are only added)."""
    state = mixed_state()
    state.meta["galaxies"] = ["Milky Way", "M31", "M33"]
    exact = ExactState(state, "cpu", "tree", Params(), state.pos.astype(np.float64),
                       state.vel.astype(np.float64), np.ones((state.n, 3)), -np.ones(state.n))
    units = UnitSystem(2.0, 3e10)
    path = archive.save_exact(tmp_path / "u.h5", exact, archive.RunInfo("m", units=units))
    v_cms = units.velocity_kms * 1e5
    expect = {"pos": 2 * KPC_CM, "vel": v_cms, "mass": 3e10 * MSUN_G, "radius": 2 * KPC_CM,
              "acc": v_cms ** 2 / (2 * KPC_CM), "pot": v_cms ** 2, "component": 1.0,
              "ids": 1.0, "exact/pos": 2 * KPC_CM, "exact/acc": v_cms ** 2 / (2 * KPC_CM)}
    with h5py.File(path) as f:
        assert f["Units"].attrs["UnitLength_in_cm"] == pytest.approx(2 * KPC_CM)
        assert f["Units"].attrs["Unit mass in cgs (U_M)"] == pytest.approx(3e10 * MSUN_G)
        assert f["Units"].attrs["UnitVelocity_in_cm_per_s"] == pytest.approx(v_cms)
        g = f["snapshots/000000"]
        for name, factor in expect.items():
            attrs = g[name].attrs
            assert all(k in attrs for k in SWIFT_KEYS + GADGET4_KEYS), name
            assert attrs[CGS] == pytest.approx(factor, rel=1e-12), name
            assert attrs["to_cgs"] == attrs[CGS], name
        assert (g["vel"].attrs["length_scaling"], g["vel"].attrs["velocity_scaling"]) == (0, 1)
        assert (g["acc"].attrs["length_scaling"], g["acc"].attrs["velocity_scaling"]) == (-1, 2)
        names = [w.decode() for w in g["component"].attrs["names"]]
        assert [names[c] for c in Component] == [c.label for c in Component]
        assert [w.decode() for w in g["galaxy"].attrs["names"]] == state.meta["galaxies"]
    back = read(path)
    assert back.state.meta["galaxies"] == state.meta["galaxies"]
    assert np.array_equal(back.exact.pos, exact.pos) and np.array_equal(back.state.vel, state.vel)

    with h5py.File(path, "a") as f:  # a file of the layout before units: read the same
        del f["Units"]

        def strip(_, item):  # (returns None: visititems goes on)
            for key in set(item.attrs) - {"time", "steps", "params", "engine", "gravity",
                                          "kinetic", "potential", "name", "device",
                                          "length_kpc", "mass_msun", "complete"}:
                del item.attrs[key]
        f.visititems(strip)
        assert "names" not in f["snapshots/000000/galaxy"].attrs
    old = read(path)
    assert np.array_equal(old.exact.pos, exact.pos) and np.array_equal(old.state.vel, state.vel)
    assert old.units == units and "galaxies" not in old.state.meta

    plain = archive.save_exact(tmp_path / "n.h5", exact, archive.RunInfo("m"))
    with h5py.File(plain) as f:
        attrs = f["snapshots/000000/pos"].attrs
        assert attrs["U_L exponent"] == 1 and CGS not in attrs and "to_cgs" not in attrs
        assert "UnitLength_in_cm" not in f["Units"].attrs


def test_archive_refuses_overwrite_and_names_missing_index(tmp_path):
    state = mixed_state(5)
    path = archive.save_exact(tmp_path / "a.h5", ExactState.of_state(state), archive.RunInfo())
    with pytest.raises(SnapshotError, match="already exists"):
        archive.save_exact(path, ExactState.of_state(state), archive.RunInfo())
    with pytest.raises(SnapshotError, match="snapshot 3 does not exist; the archive holds 1"):
        read(path, index=3)


def test_non_finite_archive_names_file_and_blames_the_file(tmp_path):
    path = archive.save_exact(tmp_path / "a.h5", ExactState.of_state(mixed_state(5)),
                              archive.RunInfo())
    with h5py.File(path, "r+") as f:
        f["snapshots/000000/pos"][2, 1] = np.nan
    with pytest.raises(SnapshotError) as info:
        read(path)
    message = str(info.value)
    assert message.startswith(f"{path}: snapshot 000000: pos holds NaN")
    assert "first at particle 2" in message and "the file is damaged" in message
    assert "reload the scene" not in message


def test_tipsy_companions_carry_components_units_and_params(tmp_path):
    state = mixed_state()
    units = UnitSystem(3.5, 1e10)
    params = Params(dt=0.1, eps=0.1, theta=0.6)
    path = save_state(tmp_path / "run.tipsy", state, params, units=units)
    snap = read(path)
    assert snap.format == "tipsy" and snap.units == units
    assert snap.params["dt"] == 0.1 and snap.params["eps"] == 0.1
    assert snap.params["theta"] == 0.6 and snap.params["integrator"] == "leapfrog"
    halo = state.component == Component.HALO
    order = np.concatenate([np.flatnonzero(halo), np.flatnonzero(~halo)])
    for name in ("component", "galaxy", "radius", "pos"):
        assert np.array_equal(getattr(snap.state, name), getattr(state, name)[order]), name


def test_pynbody_sees_our_arrays_not_metallicities(tmp_path):
    pynbody = pytest.importorskip("pynbody")
    state = mixed_state()
    path = save_state(tmp_path / "run.tipsy", state, Params(dt=0.1, eps=0.1),
                      units=UnitSystem(1.0, 1e10))
    s = pynbody.load(str(path))
    assert np.all(s.s["metals"] == 0) and np.all(s.s["tform"] == 0)
    halo = state.component == Component.HALO
    order = np.concatenate([np.flatnonzero(halo), np.flatnonzero(~halo)])
    assert np.array_equal(np.asarray(s["component"]), state.component[order])
    assert np.array_equal(np.asarray(s["galaxy"]), state.galaxy[order])
    # units from the .param file: 1 kpc, 1e10 Msun
    mass = s["mass"].in_units("Msol")
    assert np.allclose(mass, state.mass[order] * 1e10, rtol=1e-6)
    assert np.allclose(s["pos"].in_units("kpc"), state.pos[order], rtol=1e-6)


def gadget_binary(path, npart, pos, vel, ids, masses, massarr, time, fmt=1, order="<",
                  redshift=0.0, hubble=1.0):
    """A Gadget-2 snapshot written with struct, as Gadget's io.c lays it out."""
    header = struct.pack(order + "6i6d2d2i6I2i4d", *npart, *massarr, time, redshift, 0, 0,
                         *npart, 0, 1, 0.0, 0.3, 0.7, hubble)
    header += b"\0" * (256 - len(header))
    out = b""
    for label, payload in (("HEAD", header), ("POS ", pos.astype(order + "f4").tobytes()),
                           ("VEL ", vel.astype(order + "f4").tobytes()),
                           ("ID  ", ids.astype(order + "u4").tobytes()),
                           ("MASS", masses.astype(order + "f4").tobytes())):
        if label == "MASS" and not len(masses):
            continue
        if fmt == 2:
            out += struct.pack(order + "i4sii", 8, label.encode(), len(payload) + 8, 8)
        out += struct.pack(order + "i", len(payload)) + payload + struct.pack(order + "i",
                                                                             len(payload))
    path.write_bytes(out)
    return path


@pytest.mark.parametrize("fmt, order", [(1, "<"), (1, ">"), (2, "<")])
def test_gadget_binary(tmp_path, fmt, order):
    rng = np.random.default_rng(1)
    npart = [0, 6, 4, 0, 0, 1]  # halo with a fixed mass, disk with masses, one black hole
    n = sum(npart)
    pos, vel = rng.normal(size=(n, 3)), rng.normal(size=(n, 3)) * 200  # kpc, km/s
    masses = rng.uniform(0.01, 0.02, 5)  # the disk's four and the black hole's
    path = gadget_binary(tmp_path / "snap_000", npart, pos, vel, np.arange(n), masses,
                         [0, 0.05, 0, 0, 0, 0], 0.5, fmt, order)
    snap = read(path)
    assert snap.format == "gadget-binary"
    s, u = snap.state, snap.units
    assert u.length_kpc == pytest.approx(1.0, rel=1e-6)
    assert u.mass_msun == pytest.approx(1e10, rel=1e-3)
    assert list(s.component) == [Component.HALO] * 6 + [Component.DISK] * 4 + [
        Component.BLACK_HOLE]
    assert np.allclose(s.pos, pos, rtol=1e-6)
    assert np.allclose(s.mass, np.r_[[0.05] * 6, masses], rtol=1e-6)
    assert np.allclose(s.vel * u.velocity_kms, vel, rtol=1e-5)  # km/s -> N-body and back
    # 0.5 Gadget time units (kpc / (km/s) = 977.8 Myr)
    assert s.time * u.time_myr == pytest.approx(0.5 * KPC_CM / 1e5 / 3.15576e13, rel=1e-3)


def cosmological_hdf5(path, time, redshift, comoving=1, units=False):
    """A Gadget-4 snapshot of a comoving run (h = 0.7), perhaps without unit attributes."""
    rng = np.random.default_rng(4)
    pos, vel, mass = rng.normal(size=(6, 3)) * 100, rng.normal(size=(6, 3)) * 50, np.full(6, 0.2)
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        h.attrs["NumPart_ThisFile"] = np.array([0, 6, 0, 0, 0, 0], np.int32)
        h.attrs["MassTable"] = np.zeros(6)
        h.attrs["Time"], h.attrs["Redshift"], h.attrs["HubbleParam"] = time, redshift, 0.7
        p = f.create_group("Parameters")
        p.attrs["ComovingIntegrationOn"] = comoving
        if units:
            p.attrs["UnitLength_in_cm"], p.attrs["UnitMass_in_g"] = KPC_CM, 1e10 * MSUN_G
            p.attrs["UnitVelocity_in_cm_per_s"] = 1e5
        g = f.create_group("PartType1")
        g["Coordinates"], g["Velocities"], g["Masses"] = pos, vel, mass
    return path, pos, vel, mass


def test_cosmological_gadget_read_in_physical_units_with_a_warning(tmp_path, caplog):
    """z = 1 (a = 0.5), h = 0.7: x a / h, m / h, v sqrt(a), said in a warning; an HDF5 file
    without unit attributes says which units it assumes."""
    rng = np.random.default_rng(5)
    pos, vel = rng.normal(size=(4, 3)) * 100, rng.normal(size=(4, 3)) * 50
    path = gadget_binary(tmp_path / "snap_010", [0, 4, 0, 0, 0, 0], pos, vel, np.arange(4),
                         np.zeros(0), [0, 0.2, 0, 0, 0, 0], 0.5, redshift=1.0, hubble=0.7)
    hdf5, pos5, vel5, mass5 = cosmological_hdf5(tmp_path / "snap_010.hdf5", 0.5, 1.0)
    for file, x, v, m in ((path, pos, vel, np.full(4, 0.2)), (hdf5, pos5, vel5, mass5)):
        caplog.clear()
        with caplog.at_level("WARNING", logger="galaxyview"):
            snap = read(file)
        s, u = snap.state, snap.units
        assert np.allclose(s.pos * u.length_kpc, x * 0.5 / 0.7, rtol=1e-6)
        assert np.allclose(s.mass * u.mass_msun, m / 0.7 * 1e10, rtol=1e-5)
        assert np.allclose(s.vel * u.velocity_kms, v * np.sqrt(0.5), rtol=1e-5)
        text = caplog.text
        assert "cosmological" in text and "a = 0.5" in text and "h = 0.7" in text
        assert "x a / h" in text and "sqrt(a)" in text
        assert "default units assumed for it: lengths in kpc/h, masses in 1e10 Msun/h" in text
    caplog.clear()
    with caplog.at_level("WARNING", logger="galaxyview"):
        read(cosmological_hdf5(tmp_path / "units.hdf5", 0.5, 1.0, units=True)[0])
    assert "cosmological" in caplog.text and "default units" not in caplog.text


@pytest.mark.parametrize("time, redshift, comoving, names", [
    (0.9, 1.0, 1, ["Time = 0.9", "Redshift = 1"]),  # a is not 1/(1 + z)
    (0.5, 1.0, 0, ["ComovingIntegrationOn = 0", "Redshift = 1"]),
    (2.0, 0.0, 1, ["Time", "ComovingIntegrationOn"]),  # a beyond 1
])
def test_contradictory_cosmology_is_refused_naming_the_fields(tmp_path, time, redshift,
                                                             comoving, names):
    path = cosmological_hdf5(tmp_path / "snap.hdf5", time, redshift, comoving, units=True)[0]
    with pytest.raises(SnapshotError) as info:
        read(path)
    assert str(path) in str(info.value) and all(name in str(info.value) for name in names)


def test_gadget_binary_truncated(tmp_path):
    rng = np.random.default_rng(1)
    path = gadget_binary(tmp_path / "snap", [0, 3, 0, 0, 0, 0], rng.normal(size=(3, 3)),
                         rng.normal(size=(3, 3)), np.arange(3), np.zeros(0), [0, 1, 0, 0, 0, 0],
                         0.0)
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(SnapshotError, match="truncated Gadget file"):
        read(path)


def test_gadget4_and_swift_hdf5(tmp_path):
    rng = np.random.default_rng(2)
    pos1, vel1 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)) * 100
    pos2, vel2 = rng.normal(size=(3, 3)), rng.normal(size=(3, 3)) * 100
    unit_len, unit_mass = 3.0e21 * 2, 1.989e43  # 2 kpc-ish, 1e10 Msun
    path = tmp_path / "snapshot_000.hdf5"
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        h.attrs["NumPart_ThisFile"] = np.array([0, 5, 3, 0, 0, 0], np.int32)
        h.attrs["MassTable"] = np.array([0, 0.5, 0, 0, 0, 0])
        h.attrs["Time"] = 2.0
        h.attrs["NumFilesPerSnapshot"] = 1
        p = f.create_group("Parameters")
        p.attrs["UnitLength_in_cm"] = unit_len
        p.attrs["UnitMass_in_g"] = unit_mass
        p.attrs["UnitVelocity_in_cm_per_s"] = 1e5
        p.attrs["ComovingIntegrationOn"] = 0
        g = f.create_group("PartType1")
        g["Coordinates"], g["Velocities"] = pos1, vel1
        g = f.create_group("PartType2")
        g["Coordinates"], g["Velocities"], g["Masses"] = pos2, vel2, [0.1, 0.2, 0.3]
    snap = read(path)
    assert snap.format == "gadget-hdf5"
    s, u = snap.state, snap.units
    assert u.length_kpc == pytest.approx(unit_len / KPC_CM)
    assert u.mass_msun == pytest.approx(unit_mass / MSUN_G)
    assert np.allclose(s.pos, np.r_[pos1, pos2], rtol=1e-6)
    assert np.allclose(s.mass, [0.5] * 5 + [0.1, 0.2, 0.3])
    assert np.allclose(s.vel * u.velocity_kms, np.r_[vel1, vel2], rtol=1e-5)
    assert list(s.component) == [Component.HALO] * 5 + [Component.DISK] * 3

    swift = tmp_path / "swift.hdf5"
    with h5py.File(swift, "w") as f:
        h = f.create_group("Header")
        h.attrs["NumPart_ThisFile"] = np.array([0, 5, 0, 0, 0, 0, 0], np.int64)
        h.attrs["Time"] = [0.0]
        units = f.create_group("Units")
        units.attrs["Unit length in cgs (U_L)"] = [KPC_CM * 1000]  # Mpc
        units.attrs["Unit mass in cgs (U_M)"] = [MSUN_G * 1e10]
        units.attrs["Unit time in cgs (U_t)"] = [KPC_CM * 1000 / 1e5]  # velocity: km/s
        g = f.create_group("PartType1")
        g["Coordinates"], g["Velocities"], g["Masses"] = pos1, vel1, np.ones(5)
    snap = read(swift)
    assert snap.units.length_kpc == pytest.approx(1000)
    assert np.allclose(snap.state.vel * snap.units.velocity_kms, vel1, rtol=1e-5)


def test_gadget4_non_finite_values_blame_the_file(tmp_path):
    path = tmp_path / "snapshot_nan.hdf5"
    with h5py.File(path, "w") as f:
        f.create_group("Header").attrs["NumPart_ThisFile"] = np.array([0, 3, 0, 0, 0, 0])
        g = f.create_group("PartType1")
        g["Coordinates"], g["Velocities"] = np.zeros((3, 3)), np.zeros((3, 3))
        g["Velocities"][1, 2] = np.inf
        g["Masses"] = np.ones(3)
    with pytest.raises(SnapshotError) as info:
        read(path)
    message = str(info.value)
    assert message.startswith(f"{path}: vel holds NaN or infinite values (1 entries, first at "
                              "particle 1)")
    assert "the file is damaged" in message and "reload the scene" not in message


@pytest.mark.filterwarnings("ignore:No readable param file")
def test_pynbody_failures_become_errors_naming_the_file(tmp_path, monkeypatch):
    pynbody = pytest.importorskip("pynbody")
    path = tmp_path / "neg.tipsy"  # pynbody loads the header, then fails on the counts
    path.write_bytes(struct.pack(">d6i", 0.0, -5, 3, 0, -5, 0, 0))
    with pytest.raises(SnapshotError) as info:
        foreign.read(path)
    assert str(info.value).startswith(f"{path}: pynbody takes it for")
    assert "damaged or incomplete" in str(info.value)

    class Huge:  # what a header promising more particles than memory holds does
        def families(self):
            raise MemoryError("Unable to allocate 24.0 GiB")

    monkeypatch.setattr(pynbody, "load", lambda name: Huge())
    with pytest.raises(SnapshotError, match="out of memory while pynbody reads it") as info:
        foreign.read(path)
    assert str(path) in str(info.value) and "corrupt" in str(info.value)


def test_split_and_unknown_files_say_what_is_accepted(tmp_path):
    path = tmp_path / "part.0.hdf5"
    with h5py.File(path, "w") as f:
        f.create_group("Header").attrs["NumFilesPerSnapshot"] = 4
        f.create_group("PartType1")
    with pytest.raises(SnapshotError, match="split into 4"):
        read(path)
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = [1, 2]
    junk = tmp_path / "junk.dat"
    junk.write_bytes(bytes(range(256)) * 3)
    for bad in (other, junk):
        with pytest.raises(SnapshotError) as info:
            read(bad)
        assert "Gadget-2/3 binary" in str(info.value) and "Tipsy" in str(info.value)
