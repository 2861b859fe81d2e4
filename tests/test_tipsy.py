"""Tipsy snapshots: exact round trips, corrupt files, overwriting, ParticleState mapping,
ChaNGa's double-precision files."""
import warnings

import numpy as np
import pytest

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import G_SI
from galaxyview.snapshots.tipsy import (TipsySnapshot, block_dtype, damage, header_dtype, is_tipsy,
                                    load_snapshot, param_path, read_snapshot, read_tipsy,
                                    save_state, state_to_tipsy, tipsy_to_state, write_tipsy)
from galaxyview.snapshots import read


def random_snapshot(nsph, ndark, nstar, seed=0):
    """Every field filled with random bits (NaN payloads, denormals, infinities included)."""
    rng = np.random.default_rng(seed)
    snap = TipsySnapshot.empty(nsph, ndark, nstar, time=rng.normal())
    for block in (snap.gas, snap.dark, snap.star):
        raw = block.view(np.uint32).reshape(len(block), -1) if len(block) else None
        if raw is not None:
            raw[:] = rng.integers(0, 2**32, raw.shape, dtype=np.uint32)
    return snap


def same_bits(a: TipsySnapshot, b: TipsySnapshot) -> bool:
    return (np.float64(a.time).tobytes() == np.float64(b.time).tobytes() and
            all(x.tobytes() == y.tobytes() and x.dtype == y.dtype
                for x, y in zip((a.gas, a.dark, a.star), (b.gas, b.dark, b.star))))


@pytest.mark.parametrize("byteorder", ["big", "little"])
@pytest.mark.parametrize("counts", [(3, 5, 7), (0, 11, 0), (1, 0, 0), (0, 0, 13), (0, 0, 0)])
def test_round_trip_is_bit_exact(tmp_path, byteorder, counts):
    snap = random_snapshot(*counts, seed=sum(counts))
    path = write_tipsy(tmp_path / "s.tipsy", snap, byteorder=byteorder)
    assert path.stat().st_size == 32 + 48 * counts[0] + 36 * counts[1] + 44 * counts[2]
    back = read_tipsy(path)
    assert back.counts == counts
    assert same_bits(snap, back)
    # writing what was read gives the same bytes
    again = write_tipsy(tmp_path / "again.tipsy", back, byteorder=byteorder)
    assert again.read_bytes() == path.read_bytes()


def test_byte_order_on_disk(tmp_path):
    snap = random_snapshot(2, 3, 4)
    big = write_tipsy(tmp_path / "big.std", snap).read_bytes()
    little = write_tipsy(tmp_path / "little.std", snap, byteorder="little").read_bytes()
    head = np.frombuffer(big[:32], header_dtype(">"))[0]
    assert (head["nbodies"], head["ndim"], head["nsph"], head["ndark"], head["nstar"]) == \
        (9, 3, 2, 3, 4)
    assert np.frombuffer(little[:32], header_dtype("<"))[0]["nstar"] == 4
    star_at = 32 + 2 * 48 + 3 * 36
    first_star = np.frombuffer(big[star_at:star_at + 44], block_dtype("star", ">"))[0]
    assert first_star.tobytes() == snap.star[0].astype(block_dtype("star", ">")).tobytes()
    assert big != little


def write_raw(path, header_values, payload_bytes, order=">"):
    header = np.array([header_values], header_dtype(order))
    path.write_bytes(header.tobytes() + b"\0" * payload_bytes)
    return path


@pytest.mark.parametrize("make, words", [
    (lambda p: p.write_bytes(b""), ["empty", "0 bytes"]),
    (lambda p: p.write_bytes(b"\0" * 20), ["20 bytes", "32-byte"]),
    (lambda p: p.write_text("[scene]\nname = 'not a snapshot at all'\n"), ["not a Tipsy", "ndim"]),
    (lambda p: write_raw(p, (0.0, 10, 3, 0, 10, 0, 0), 36 * 10 - 1), ["truncated", "392", "391"]),
    (lambda p: write_raw(p, (0.0, 4, 3, 1, 1, 2, 0), 48 + 36 + 44 * 2 + 8), ["8 bytes too long"]),
    (lambda p: write_raw(p, (0.0, 5, 3, 0, 4, 0, 0), 36 * 4), ["nbodies = 5", "0 + 4 + 0"]),
    (lambda p: write_raw(p, (0.0, -2, 3, 0, -2, 0, 0), 0), ["negative", "ndark = -2"]),
    (lambda p: write_raw(p, (0.0, 4, 2, 0, 4, 0, 0), 36 * 4), ["ndim = 2"]),
    (lambda p: write_raw(p, (np.nan, 1, 3, 0, 1, 0, 0), 36, "<"), ["time = nan"]),
])
def test_corrupt_files_name_file_and_problem(tmp_path, make, words):
    path = tmp_path / "bad.tipsy"
    make(path)
    with pytest.raises(SnapshotError) as info:
        read_tipsy(path)
    message = str(info.value)
    assert str(path) in message
    for word in words:
        assert word in message
    assert not is_tipsy(path)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(SnapshotError, match="no such file"):
        read_tipsy(tmp_path / "nope.tipsy")
    with pytest.raises(SnapshotError, match="is a folder"):
        read_tipsy(tmp_path)


def test_snapshot_without_particles_cannot_be_loaded(tmp_path):
    path = write_tipsy(tmp_path / "none.tipsy", TipsySnapshot())
    assert read_tipsy(path).n == 0
    with pytest.raises(SnapshotError, match="no particles"):
        load_snapshot(path)


def test_refuses_to_overwrite(tmp_path):
    path = tmp_path / "s.tipsy"
    path.write_bytes(b"precious")
    with pytest.raises(GalaxyviewError) as info:
        write_tipsy(path, random_snapshot(1, 1, 1))
    assert str(path) in str(info.value) and "overwrite=True" in str(info.value)
    assert path.read_bytes() == b"precious"
    write_tipsy(path, random_snapshot(1, 1, 1), overwrite=True)
    assert read_tipsy(path).counts == (1, 1, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.tipsy"]  # no temp file left


def test_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(SnapshotError, match="cannot write"):
        write_tipsy(tmp_path / "missing-folder" / "s.tipsy", random_snapshot(1, 1, 1))
    with pytest.raises(GalaxyviewError, match="byteorder"):
        write_tipsy(tmp_path / "s.tipsy", random_snapshot(1, 1, 1), byteorder="middle")
    assert list(tmp_path.iterdir()) == []


def test_bad_block_is_rejected():
    with pytest.raises(GalaxyviewError, match="dark block"):
        TipsySnapshot(dark=np.zeros(3, block_dtype("star")))


def make_state(seed=3):
    rng = np.random.default_rng(seed)
    n = 40
    component = rng.integers(0, len(Component), n).astype(np.uint8)
    galaxy = rng.integers(0, 3, n).astype(np.int16)
    return ParticleState(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)),
                         rng.uniform(0.1, 1.0, n), component, galaxy, time=2.5)


@pytest.mark.parametrize("byteorder", ["big", "little"])
def test_state_round_trip_keeps_components_and_galaxies(tmp_path, byteorder):
    state = make_state()
    potential = -np.arange(state.n, dtype=np.float32)
    path = save_state(tmp_path / "s.bin", state, Params(eps=0.125), potential,
                      byteorder=byteorder)
    snap = read_tipsy(path)
    halo = state.component == Component.HALO
    assert snap.counts == (0, int(halo.sum()), int((~halo).sum()))
    assert np.all(snap.dark["eps"] == 0.125) and np.all(snap.star["eps"] == 0.125)
    assert np.array_equal(snap.dark["phi"], potential[halo])
    # metals and tform keep their meaning: galaxyview has no metallicities or formation times
    assert np.all(snap.star["metals"] == 0) and np.all(snap.star["tform"] == 0)
    back = load_snapshot(path)
    order = np.concatenate([np.flatnonzero(halo), np.flatnonzero(~halo)])  # dark, then star
    for name in ("pos", "vel", "mass", "component"):
        assert np.array_equal(getattr(back, name), getattr(state, name)[order]), name
    assert np.array_equal(back.galaxy, state.galaxy[order])  # from the .galaxy file
    assert back.time == 2.5 and back.meta["source"] == str(path)


def test_foreign_files_map_to_defaults():
    snap = TipsySnapshot.empty(2, 1, 5)
    snap.star["metals"] = [0.02, 1.0, 5.0, 6.0, np.nan]  # metallicities, not component codes
    snap.star["tform"] = [0.7, 2.0, -1.0, 7.0, np.inf]
    state = tipsy_to_state(snap)
    assert list(state.component) == [Component.STAR] * 2 + [Component.HALO] + [
        Component.DISK] * 5
    assert list(state.galaxy) == [0] * 8


def test_non_finite_particles_name_the_file():
    snap = TipsySnapshot.empty(0, 2, 0)
    snap.dark["pos"][1, 0] = np.nan
    with pytest.raises(SnapshotError, match="run.tipsy: pos holds NaN") as info:
        tipsy_to_state(snap, "run.tipsy")
    assert "the file is damaged" in str(info.value)  # about the file, not the run in hand
    assert "reload the scene" not in str(info.value)


@pytest.mark.parametrize("cut, words", [
    (lambda data: data[:1000],
     ["truncated Tipsy file", "promises 40 particles", "holds only 1000 bytes"]),
    (lambda data: data[:-1], ["truncated Tipsy file", "promises 40 particles"]),
    (lambda data: np.array([(2.0, -5, 3, 0, -5, 0, 0)], header_dtype(">")).tobytes(),
     ["negative particle count", "nbodies = -5"]),
    (lambda data: np.array([(2.0, 2**30, 3, 0, 2**30, 0, 0)], header_dtype(">")).tobytes()
     + bytes(1000), ["truncated Tipsy file", "promises 1073741824 particles", "holds only 1032"]),
])
def test_damaged_tipsy_is_refused_not_handed_to_pynbody(tmp_path, cut, words):
    """pynbody (the fallback) would pad a short file with zeros, fail on a negative count,
    or allocate what a huge count asks for."""
    whole = save_state(tmp_path / "whole.tipsy", make_state())
    path = tmp_path / "cut.tipsy"
    path.write_bytes(cut(whole.read_bytes()))
    with pytest.raises(SnapshotError) as info:
        read(path)
    for word in [str(path), *words]:
        assert word in str(info.value)


def test_damage_leaves_sound_double_and_other_files_alone(tmp_path):
    whole = save_state(tmp_path / "whole.tipsy", make_state())
    double = tmp_path / "double.tipsy"  # 24 bytes a particle more: double positions, velocities
    double.write_bytes(whole.read_bytes() + bytes(40 * 24))
    other = tmp_path / "other.dat"
    other.write_bytes(bytes(range(256)))
    assert [damage(p) for p in (whole, double, other)] == [None, None, None]
    assert "truncated" in str(damage(write_raw(tmp_path / "short.tipsy",
                                               (0.0, 3, 3, 0, 3, 0, 0), 36 * 2)))
    longer = tmp_path / "longer.tipsy"  # fits no precision: refused, not handed to pynbody
    longer.write_bytes(whole.read_bytes() + bytes(40 * 5))
    with pytest.raises(SnapshotError) as info:
        read(longer)
    for words in ("200 bytes too long", "in single precision", "with double positions and "
                  f"velocities", str(longer)):
        assert words in str(info.value)


def write_precision(path, snap: TipsySnapshot, precision: str, param: str | None = None):
    """`snap` as ChaNGa writes it with bDoublePos / bDoubleVel (big-endian); its .param."""
    header = np.array([(snap.time, snap.n, 3, *snap.counts, 0)], header_dtype(">"))
    with open(path, "wb") as f:
        header.tofile(f)
        for block in (snap.gas, snap.dark, snap.star):
            wide = block_dtype({36: "dark", 44: "star", 48: "gas"}[block.dtype.itemsize], ">",
                               precision)
            block.astype(wide).tofile(f)
    if param is not None:
        param_path(path).write_text(param)
    return path


def sample_snapshot(seed=5):
    """Finite values, positions far from the origin (float64 then rounds to float32)."""
    rng = np.random.default_rng(seed)
    snap = TipsySnapshot.empty(2, 9, 6, time=0.75)
    for block in (snap.gas, snap.dark, snap.star):
        block["mass"] = rng.uniform(0.1, 1.0, len(block))
        block["pos"] = rng.normal(size=(len(block), 3)) + 5e4
        block["vel"] = rng.normal(size=(len(block), 3))
    return snap


@pytest.mark.parametrize("precision, param", [
    ("double positions", None), ("double", None), ("double positions", "bDoublePos = 1\n"),
    ("double velocities", "bDoubleVel = 1\nbDoublePos = 0\n"),
    ("double", "bDoublePos = 1\nbDoubleVel = 1  # ChaNGa\n"), ("single", "bDoublePos = 0\n")])
def test_double_precision_files_read_by_param_or_size(tmp_path, precision, param):
    snap = sample_snapshot()
    path = write_precision(tmp_path / "d.tipsy", snap, precision, param)
    assert is_tipsy(path)
    got = read(path)
    assert got.format == "tipsy" and got.notes["precision"] == precision
    order = [snap.gas, snap.dark, snap.star]
    for field in ("pos", "vel", "mass"):
        np.testing.assert_array_equal(getattr(got.state, field),
                                      np.concatenate([b[field] for b in order]))
    assert got.state.time == 0.75


def test_double_velocities_are_ambiguous_without_param(tmp_path):
    """The size of double velocities is that of double positions: the .param must say."""
    snap = sample_snapshot()
    path = write_precision(tmp_path / "v.tipsy", snap, "double velocities")
    with pytest.raises(SnapshotError, match="pos values up to .*beyond float32.*bDoubleVel = 1"):
        read_tipsy(path)  # velocities read as positions: values no float32 holds
    assert read(write_precision(tmp_path / "p.tipsy", snap, "double positions")).notes[
        "precision"] == "double positions"
    param_path(path).write_text("bDoubleVel = 1\n")
    assert read_tipsy(path, "double velocities").precision == "double velocities"
    np.testing.assert_array_equal(read(path).state.vel[-1], snap.star["vel"][-1])


@pytest.mark.parametrize("param, words", [
    ("bDoublePos = 1\n", ["declares double positions precision", "has 716", "as in single "
                           "precision", "correct bDoublePos"]),
    ("bDoubleVel = 1\nbDoublePos = 1\n", ["declares double precision", "as in single"]),
    ("bDoublePos = 2\n", ["line 1", "bDoublePos = 2", "must be 0 or 1"]),
    ("bDoubleVel = yes\n", ["line 1", "bDoubleVel", "not a number"])])
def test_precision_in_param_that_does_not_fit_is_refused(tmp_path, param, words):
    path = write_precision(tmp_path / "s.tipsy", sample_snapshot(), "single", param)
    with pytest.raises(SnapshotError) as info:
        read(path)
    for word in words:
        assert word in str(info.value)


def test_double_precision_written_by_pynbody_matches_pynbody(tmp_path):
    pynbody = pytest.importorskip("pynbody")
    rng = np.random.default_rng(7)
    sim = pynbody.new(dm=30, star=20)
    sim["pos"] = rng.normal(size=(50, 3)) * 1e3 + 1e5
    sim["vel"] = rng.normal(size=(50, 3))
    sim["mass"] = rng.uniform(0.1, 1.0, 50)
    path = tmp_path / "p.tipsy"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim.write(fmt=pynbody.snapshot.tipsy.TipsySnap, filename=str(path), double_pos=True,
                  double_vel=True)
    got = read(path)
    assert got.notes["precision"] == "double"
    np.testing.assert_array_equal(got.state.pos, np.asarray(sim["pos"], np.float32))
    np.testing.assert_array_equal(got.state.vel, np.asarray(sim["vel"], np.float32))


@pytest.mark.parametrize("line, words", [
    ("dDelta = -5", ["dDelta", "dt must be", "-5"]),
    ("dTheta = nan", ["dTheta", "theta must be", "nan"]),
    ("# galaxyview integrator = Leap Frog", ["galaxyview integrator", "module name"]),
    ("# galaxyview sheet = {omega: 1}", ["line", "sheet", "not the shearing sheet's JSON"]),
    ('# galaxyview sheet = {"omega": -1, "lx": 1, "ly": 1}', ["sheet omega must be a positive"]),
    ("# galaxyview G = big", ["G = 'big' is not a number"]),
    ("# galaxyview G = -1", ["'# galaxyview G'", "G must be"]),
])
def test_param_file_values_out_of_range_name_file_and_key(tmp_path, line, words):
    path = save_state(tmp_path / "run.tipsy", make_state(), Params())
    with open(param_path(path), "a") as f:
        f.write(line + "\n")
    with pytest.raises(SnapshotError) as info:
        read_snapshot(path)
    for word in [str(param_path(path)), *words]:
        assert word in str(info.value)


def test_binary_param_file_is_not_called_an_array_file(tmp_path):
    path = save_state(tmp_path / "run.tipsy", make_state(), Params())
    param_path(path).write_bytes(b"theta = banana\n\0\xff garbage\n")
    with pytest.raises(SnapshotError, match="not a text parameter file") as info:
        read_snapshot(path)
    assert str(param_path(path)) in str(info.value)
    assert "particle count" not in str(info.value)


def test_potential_must_match_particles():
    with pytest.raises(GalaxyviewError, match="one value per particle"):
        state_to_tipsy(make_state(), potential=np.zeros(3))


def test_double_values_beyond_float32_are_refused_naming_the_field(tmp_path):
    snap = sample_snapshot()
    path = tmp_path / "big.tipsy"
    write_precision(path, snap, "double")
    data = bytearray(path.read_bytes())  # first gas particle's vy: 1e300 as a big-endian double
    at = 32 + 4 + 3 * 8 + 8
    data[at:at + 8] = np.array([1e300], ">f8").tobytes()
    path.write_bytes(bytes(data))
    with pytest.raises(SnapshotError) as info:
        read(path)
    assert "vel values up to 1e+300, beyond float32" in str(info.value)
    assert "bDoubleVel = 1" not in str(info.value)  # the size gave double: no hint to add it


def test_ring_run_saved_as_tipsy_restarts_with_its_sheet_and_g(tmp_path):
    """The ring modules need the shearing sheet and SI G: they travel in the .param file."""
    import galaxyview as gv
    from galaxyview.snapshots import params_of

    with gv.open("ring-equilibrium", backend="reference", n=300) as sim:
        sim.step(1)
        path = sim.save(tmp_path / "ring.tipsy")
        params = sim.params
    assert f"G = {G_SI!r}" in param_path(path).read_text()
    back = params_of(read(path))
    assert (back.G, back.sheet, back.integrator, back.boundary, back.collision) == (
        params.G, params.sheet, "sei", "shear-periodic", "hard-spheres")
    with gv.open(path, backend="reference") as sim:  # refused without the sheet before
        sim.step(2)
        assert sim.params.sheet == params.sheet and np.isfinite(sim.positions).all()


@pytest.mark.parametrize("where", ["beside", "parent"])
def test_run_param_found_as_pynbody_finds_it(tmp_path, where):
    """ChaNGa's layout: run.param (achOutName = run) beside run.00100 or in the folder above;
    galaxyview takes its units and parameters as pynbody does."""
    pynbody = pytest.importorskip("pynbody")
    folder = tmp_path / "out"
    folder.mkdir()
    snap = sample_snapshot()
    path = write_tipsy(folder / "run.00100", snap)
    param = (folder if where == "beside" else tmp_path) / "run.param"
    param.write_text("achOutName = run\ndKpcUnit = 2.5\ndMsolUnit = 3e9\ndDelta = 0.01\n")
    sim = pynbody.load(str(path))
    assert float(sim["pos"].units.in_units("kpc")) == pytest.approx(2.5)
    assert float(sim["mass"].units.in_units("Msol")) == pytest.approx(3e9)
    # another run's file beside it (pynbody would take whichever it lists first)
    (folder / "other.param").write_text("achOutName = other\ndKpcUnit = 7\ndMsolUnit = 1\n")
    found = read(path)
    assert found.units is not None
    assert (found.units.length_kpc, found.units.mass_msun) == (2.5, 3e9)
    assert found.params["dt"] == 0.01
    assert np.allclose(found.state.pos, sim["pos"])


def test_param_of_another_run_is_not_taken(tmp_path):
    """A .param whose achOutName names another run's outputs is not this snapshot's."""
    path = write_tipsy(tmp_path / "run.00100", sample_snapshot())
    (tmp_path / "cosmo.param").write_text("achOutName = cosmo\ndKpcUnit = 2.5\n"
                                          "dMsolUnit = 3e9\n")
    assert read(path).units is None
