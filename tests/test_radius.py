"""Per-particle radii: ParticleState.radius and the `<snapshot>.radius` auxiliary array."""
import warnings

import numpy as np
import pytest

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.model.params import Params
from galaxyview.snapshots import load_source
from galaxyview.model.state import Component, ParticleState
from galaxyview.snapshots.tipsy import (TipsySnapshot, load_snapshot, radius_path, read_radius,
                                    read_tipsy, save_state, snapshot_order, tipsy_to_state,
                                    write_tipsy)


def points(n=4, radius=None):
    pos = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    return ParticleState(pos, -pos, np.full(n, 1.0 / n), radius=radius)


# -- ParticleState ------------------------------------------------------------------------------
def test_radius_defaults_to_point_masses():
    state = points()
    assert state.radius.dtype == np.float32 and state.radius.shape == (4,)
    assert np.all(state.radius == 0) and not state.has_radius
    # the positional form used across the code base still works, radius last
    pos = np.zeros((2, 3))
    old = ParticleState(pos, pos, np.ones(2), np.full(2, Component.DISK), np.zeros(2), 1.5,
                        {"scene": "x"})
    assert old.time == 1.5 and old.meta == {"scene": "x"} and list(old.radius) == [0, 0]
    given = ParticleState(pos, pos, np.ones(2), None, None, 0.0, {}, [0.0, 0.25])
    assert given.radius.dtype == np.float32 and list(given.radius) == [0.0, 0.25]
    assert given.has_radius


@pytest.mark.parametrize("radius, words", [
    ([0.1, 0.2, -0.5, 0.1], ["finite and >= 0", "first at particle 2", "-0.5"]),
    ([np.nan, 0.2, 0.3, np.nan], ["finite and >= 0", "2 bad entries", "first at particle 0"]),
    ([0.1, 0.2, 0.3, np.inf], ["first at particle 3", "inf"]),
    ([0.1, 1e300, 0.3, 0.4], ["first at particle 1", "inf"]),  # beyond float32
    ([0.1, 0.2, 0.3], ["one value per particle", "(4,)", "(3,)"]),
    (np.zeros((4, 1)), ["one value per particle", "(4, 1)"]),
    (0.5, ["one value per particle", "shape ()"]),
])
def test_bad_radii_are_refused(radius, words):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no float32 overflow warning on the way
        with pytest.raises(GalaxyviewError) as info:
            points(radius=radius)
    for word in words:
        assert word in str(info.value)


def test_copy_and_concatenate_keep_radii():
    a = points(3, [0.0, 0.5, 0.25])
    b = a.copy()
    assert np.array_equal(b.radius, a.radius) and b.has_radius
    b.radius[0] = 9.0
    assert a.radius[0] == 0.0  # a real copy
    joined = ParticleState.concatenate([a, points(2), a])
    assert joined.radius.dtype == np.float32
    assert list(joined.radius) == [0.0, 0.5, 0.25, 0.0, 0.0, 0.0, 0.5, 0.25]
    assert not ParticleState.concatenate([points(2), points(1)]).has_radius


# -- snapshots ----------------------------------------------------------------------------------
def ring_state(n=30, seed=5):
    """HALO and DISK particles interleaved, radii distinct and hard to print (some zero)."""
    rng = np.random.default_rng(seed)
    component = np.where(rng.random(n) < 0.4, Component.HALO, Component.DISK).astype(np.uint8)
    radius = rng.uniform(0, 1e-3, n).astype(np.float32) / np.float32(3)
    radius[::7] = 0
    radius[1] = np.float32(1e-30)
    return ParticleState(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.uniform(0.5, 1, n),
                         component, rng.integers(0, 2, n), 0.75, radius=radius)


def files(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("byteorder", ["big", "little"])
def test_round_trip_keeps_each_particles_radius(tmp_path, byteorder):
    state = ring_state()
    halo = state.component == Component.HALO
    assert 0 < halo.sum() < state.n and not halo[:3].all()  # really mixed
    path = save_state(tmp_path / "ring.tipsy", state, byteorder=byteorder)
    assert files(tmp_path) == ["ring.tipsy", "ring.tipsy.component", "ring.tipsy.galaxy",
                               "ring.tipsy.radius"]
    lines = radius_path(path).read_text().splitlines()
    assert lines[0] == str(state.n) and len(lines) == state.n + 1
    # file order: the dark block (HALO), then the star block
    order = snapshot_order(state)
    assert np.array_equal(np.array(lines[1:], np.float32), state.radius[order])
    assert np.array_equal(order[:halo.sum()], np.flatnonzero(halo))

    back = load_snapshot(path)
    assert back.radius.dtype == np.float32
    in_state_order = np.empty_like(back.radius)
    in_state_order[order] = back.radius
    assert np.array_equal(in_state_order, state.radius)  # bit-exact, particle by particle
    assert np.array_equal(back.pos, state.pos[order])  # the same particles carry them
    # eps keeps its meaning: the softening, not the radius
    snap = read_tipsy(path)
    assert np.all(snap.dark["eps"] == np.float32(Params().eps))
    assert np.all(snap.star["eps"] == np.float32(Params().eps))


def test_no_radius_file_without_radii(tmp_path):
    state = ring_state()
    state.radius[:] = 0
    path = save_state(tmp_path / "s.tipsy", state)
    assert files(tmp_path) == ["s.tipsy", "s.tipsy.component", "s.tipsy.galaxy"]
    assert not load_snapshot(path).has_radius


def test_overwrite_replaces_or_removes_the_radius_file(tmp_path):
    path = save_state(tmp_path / "s.tipsy", ring_state(30))
    new = ring_state(12, seed=8)
    save_state(path, new, overwrite=True)
    assert radius_path(path).read_text().splitlines()[0] == "12"
    assert np.array_equal(load_snapshot(path).radius, new.radius[snapshot_order(new)])
    plain = new.copy()
    plain.radius[:] = 0
    save_state(path, plain, overwrite=True)
    # stale radii gone, no temporary file left
    assert files(tmp_path) == ["s.tipsy", "s.tipsy.component", "s.tipsy.galaxy"]
    assert not load_snapshot(path).has_radius


@pytest.mark.parametrize("with_radii", [True, False])
def test_an_existing_radius_file_alone_refuses_the_write(tmp_path, with_radii):
    state = ring_state() if with_radii else points()
    aux = tmp_path / "s.tipsy.radius"
    aux.write_text("precious")
    with pytest.raises(GalaxyviewError) as info:
        save_state(tmp_path / "s.tipsy", state)
    assert str(aux) in str(info.value) and "overwrite=True" in str(info.value)
    assert files(tmp_path) == ["s.tipsy.radius"] and aux.read_text() == "precious"


def test_an_existing_snapshot_refuses_before_the_radius_file(tmp_path):
    path = tmp_path / "s.tipsy"
    path.write_bytes(b"precious")
    with pytest.raises(GalaxyviewError, match="overwrite=True"):
        save_state(path, ring_state())
    assert files(tmp_path) == ["s.tipsy"] and path.read_bytes() == b"precious"


def test_failed_write_leaves_no_radius_file(tmp_path):
    with pytest.raises(GalaxyviewError, match="byteorder"):
        save_state(tmp_path / "s.tipsy", ring_state(), byteorder="middle")
    with pytest.raises(SnapshotError, match="cannot write"):
        save_state(tmp_path / "missing" / "s.tipsy", ring_state())
    (tmp_path / "d.tipsy.radius").mkdir()
    with pytest.raises(GalaxyviewError, match="is a folder"):
        save_state(tmp_path / "d.tipsy", ring_state(), overwrite=True)
    assert files(tmp_path) == ["d.tipsy.radius"]


def foreign_snapshot(tmp_path, aux_text):
    """A 2 gas + 1 dark + 2 star snapshot with a hand-written radius file beside it."""
    snap = TipsySnapshot.empty(2, 1, 2)
    for block in (snap.gas, snap.dark, snap.star):
        block["mass"] = 1.0
    path = write_tipsy(tmp_path / "run.000100", snap)
    radius_path(path).write_bytes(aux_text.encode())
    return path


def test_a_changa_style_file_is_read_in_block_order(tmp_path):
    path = foreign_snapshot(tmp_path, "5\r\n0.1\r\n0\r\n2.5e-3\r\n 7 \r\n1e-2\r\n\r\n")
    state = load_snapshot(path)
    assert np.array_equal(state.radius, np.float32([0.1, 0, 2.5e-3, 7, 1e-2]))
    assert list(state.component) == [Component.STAR] * 2 + [Component.HALO] + [Component.DISK] * 2
    assert np.array_equal(load_source(path)[0].radius, state.radius)
    assert read_radius(tmp_path / "elsewhere.tipsy", 5) is None


@pytest.mark.parametrize("text, words", [
    ("4\n0.1\n0.2\n0.3\n0.4\n", ["line 1 gives 4 particles", "has 5"]),
    ("6\n0.1\n0.2\n0.3\n0.4\n0.5\n0.6\n", ["line 1 gives 6 particles", "has 5"]),
    ("5\n0.1\n0.2\n0.3\n", ["3 values after the count line, 5 expected"]),
    ("5\n0.1\n0.2\nwide\n0.4\n0.5\n", ["line 4", "'wide' is not a number"]),
    ("5\n0.1\n0.2\n\n0.4\n0.5\n", ["line 4", "'' is not a number"]),
    ("5\n0.1\n0.2 0.3\n0.3\n0.4\n0.5\n", ["line 3", "not a number"]),
    ("5\n0.1\n0.2\n0.3\n-0.4\n0.5\n", ["line 5", "-0.4 is negative"]),
    ("5\n0.1\nnan\n0.3\n0.4\n0.5\n", ["line 3", "nan is not finite"]),
    ("5\n0.1\n0.2\n0.3\n0.4\ninf\n", ["line 6", "inf is not finite"]),
    ("5\n1e39\n0.2\n0.3\n0.4\n0.5\n", ["line 2", "too large for float32"]),
    ("five\n0.1\n", ["line 1", "'five' is not a particle count"]),
    ("\n\n", ["empty"]),
])
def test_bad_radius_files_name_file_and_line(tmp_path, text, words):
    path = foreign_snapshot(tmp_path, text)
    with pytest.raises(SnapshotError) as info:
        load_snapshot(path)
    message = str(info.value)
    assert message.startswith(f"{radius_path(path)}: ")
    for word in words:
        assert word in message


def test_a_binary_radius_file_is_refused(tmp_path):
    path = foreign_snapshot(tmp_path, "")
    radius_path(path).write_bytes(b"\xff\xfe\x00\x01" * 8)
    with pytest.raises(SnapshotError, match="not a text file"):
        load_snapshot(path)


def test_tipsy_to_state_takes_radii_in_block_order():
    snap = TipsySnapshot.empty(0, 2, 1)
    state = tipsy_to_state(snap, radius=[0.5, 0.0, 2.0])
    assert list(state.radius) == [0.5, 0.0, 2.0] and state.has_radius
    with pytest.raises(SnapshotError, match="mine.tipsy: radius must be finite"):
        tipsy_to_state(snap, "mine.tipsy", radius=[0.5, -1.0, 2.0])
