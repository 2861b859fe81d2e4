"""The CPU octree (shared layout) and its forces against direct summation."""
import numpy as np
import pytest

from galaxyview.engines.cpu import keys as mkeys
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.tree import build_tree
from galaxyview.engines.cpu.forces import tree_forces
from galaxyview.engines.cpu.walk import interaction_lists
from galaxyview.errors import EngineError, ParameterError
from galaxyview.model.diagnostics import force_error_percentiles, relative_force_errors
from galaxyview.model.ics.plummer import plummer_sphere

N_LEAF, N_CRIT = 16, 64


def plummer(n, seed=1):
    return plummer_sphere(n, np.random.default_rng(seed))


def degenerate(n_same=100, n_other=37, seed=3):
    """n_same particles at one point (a deepest-level leaf) among n_other scattered ones."""
    rng = np.random.default_rng(seed)
    pos = np.r_[np.full((n_same, 3), 0.25), rng.uniform(-1, 1, (n_other, 3))]
    perm = rng.permutation(len(pos))
    return pos[perm].astype(np.float32), rng.uniform(0.5, 1.5, len(pos)).astype(np.float32)


def cases():
    out = {}
    for n in (1, 2, 17, 1000, 4099):
        s = plummer(n, seed=n)
        out[f"plummer{n}"] = (s.pos, s.mass)
    rng = np.random.default_rng(7)
    out["uniform777"] = (rng.uniform(-3, 5, (777, 3)).astype(np.float32),
                         rng.uniform(0.1, 1, 777).astype(np.float32))
    out["degenerate"] = degenerate()
    out["all_same"] = (np.full((50, 3), -2.0, np.float32), np.ones(50, np.float32))
    return out


CASES = cases()


@pytest.fixture(scope="module", params=sorted(CASES))
def built(request):
    pos, mass = CASES[request.param]
    return pos, mass, build_tree(pos, mass, N_LEAF, N_CRIT)


def naive_key(c):
    k = 0
    for b in range(21):
        k |= ((int(c[0]) >> b) & 1) << (3 * b + 2)
        k |= ((int(c[1]) >> b) & 1) << (3 * b + 1)
        k |= ((int(c[2]) >> b) & 1) << (3 * b)
    return k


def test_bounding_cube_and_keys(built):
    pos, _, t = built
    assert np.array_equal(t.lo, pos.min(axis=0))
    extent = np.float32((pos.max(axis=0) - pos.min(axis=0)).max())
    expect = np.float32(extent * np.float32(1 + 1e-5)) if extent > 0 else np.float32(1)
    assert t.L == expect and t.scale == np.float32(np.float32(2**21) / expect)
    coords = np.clip(np.floor((pos - t.lo) * t.scale), 0, 2**21 - 1).astype(np.int64)
    assert coords.max() < 2**21
    for i in range(0, len(pos), max(1, len(pos) // 50)):
        assert int(t.keys[np.flatnonzero(t.order == i)[0]]) == naive_key(coords[i])
    assert np.all(t.keys[1:] >= t.keys[:-1])
    assert np.array_equal(np.sort(t.order), np.arange(len(pos)))
    ties = t.keys[1:] == t.keys[:-1]
    assert np.all(t.order[1:][ties] > t.order[:-1][ties])  # stable sort
    assert np.array_equal(t.pos, pos[t.order])


def test_cells_partition_and_links(built):
    _, _, t = built
    n, leaf = t.n, t.child_count == 0
    # every particle in exactly one leaf
    hits = np.zeros(n, int)
    for b, c in zip(t.body_begin[leaf], t.body_count[leaf]):
        hits[b:b + c] += 1
    assert np.all(hits == 1)
    # leaves hold <= n_leaf particles unless at the deepest level
    assert np.all((t.body_count[leaf] <= N_LEAF) | (t.level[leaf] == mkeys.MAX_LEVEL))
    assert np.all(t.body_count[~leaf] > N_LEAF)
    # breadth first numbering and level offsets
    assert t.level[0] == 0 and t.parent[0] == -1 and t.body_count[0] == n
    assert np.all(np.diff(t.level) >= 0)
    assert np.array_equal(t.level_begin, np.searchsorted(t.level, np.arange(t.depth + 2)))
    for cell in np.flatnonzero(~leaf):
        kids = np.arange(t.child_begin[cell], t.child_begin[cell] + t.child_count[cell])
        assert np.all(t.parent[kids] == cell) and np.all(t.level[kids] == t.level[cell] + 1)
        # children tile the parent's particles in key order
        assert t.body_begin[kids[0]] == t.body_begin[cell]
        assert np.array_equal(t.body_begin[kids[1:]], (t.body_begin + t.body_count)[kids[:-1]])
        assert t.body_count[kids].sum() == t.body_count[cell]
    inner = np.flatnonzero(~leaf)
    assert np.array_equal(t.child_begin[inner][1:], (t.child_begin + t.child_count)[inner][:-1])
    assert np.all(t.parent[1:] >= 0)


def test_cells_are_key_prefixes_and_cubes(built):
    _, _, t = built
    for cell in range(t.n_cells):
        b, c, lev = t.body_begin[cell], t.body_count[cell], t.level[cell]
        shift = np.uint64(63 - 3 * lev)
        prefix = t.keys[b:b + c] >> shift
        assert np.all(prefix == prefix[0])
        if b > 0:
            assert t.keys[b - 1] >> shift != prefix[0]
        if b + c < t.n:
            assert t.keys[b + c] >> shift != prefix[0]
        assert t.size[cell] == pytest.approx(float(t.L) / 2**lev)
        half = 0.5 * t.size[cell] * (1 + 1e-5) + 1e-6 * float(t.L)
        assert np.all(np.abs(t.pos[b:b + c] - t.center[cell]) <= half)


def test_multipoles_match_their_particles(built):
    _, _, t = built
    for cell in range(t.n_cells):
        b, c = t.body_begin[cell], t.body_count[cell]
        x, m = t.pos[b:b + c].astype(np.float64), t.mass[b:b + c].astype(np.float64)
        mass = m.sum()
        com = (m @ x) / mass
        d = x - com
        q = np.array([(m * d[:, i] * d[:, j]).sum()
                      for i, j in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))])
        assert t.cell_mass[cell] == pytest.approx(mass, rel=1e-6)
        assert np.allclose(t.com[cell], com, rtol=1e-6, atol=1e-6 * t.size[cell])
        scale = q[:3].sum() + 1e-6 * mass * t.size[cell] ** 2  # trace bounds every entry
        assert np.abs(t.quad[cell] - q).max() <= 1e-6 * scale
        # the MAC's l and delta: the box of the cell's particles, not the key cell
        lo, hi = x.min(axis=0), x.max(axis=0)
        assert t.extent[cell] == (hi - lo).max() <= t.size[cell] * (1 + 1e-6)
        assert t.delta[cell] == pytest.approx(np.linalg.norm(com - 0.5 * (lo + hi)),
                                              rel=1e-5, abs=1e-6 * t.size[cell])
    assert t.cell_mass.dtype == t.com.dtype == t.quad.dtype == np.float32


def test_groups_cover_particles_once_and_are_compact(built):
    _, _, t = built
    gb, gc = t.group_begin, t.group_count
    assert gb[0] == 0 and np.array_equal(gb[1:], (gb + gc)[:-1]) and gb[-1] + gc[-1] == t.n
    assert np.all((gc >= 1) & (gc <= N_CRIT))
    # a group is a cell, a run of siblings, or a piece of one deepest-level leaf
    ends = t.body_begin + t.body_count
    for b, c in zip(gb, gc):
        inside = np.flatnonzero((t.body_begin <= b) & (ends >= b + c))
        cell = inside[np.argmax(t.level[inside])]  # smallest cell holding the group
        if t.child_count[cell] == 0:
            whole = (t.body_begin[cell], t.body_count[cell]) == (b, c)
            assert whole or t.level[cell] == mkeys.MAX_LEVEL
            continue
        if (t.body_begin[cell], t.body_count[cell]) == (b, c):
            continue
        kids = np.arange(t.child_begin[cell], t.child_begin[cell] + t.child_count[cell])
        assert t.body_count[cell] > N_CRIT
        assert b in t.body_begin[kids] and b + c in ends[kids]


def test_degenerate_points_end_in_one_deepest_leaf():
    pos, mass = degenerate(n_same=200)
    t = build_tree(pos, mass, N_LEAF, N_CRIT)
    deepest = np.flatnonzero((t.child_count == 0) & (t.body_count > N_LEAF))
    assert len(deepest) == 1 and t.level[deepest[0]] == mkeys.MAX_LEVEL
    assert t.body_count[deepest[0]] == 200
    b = t.body_begin[deepest[0]]
    assert np.all(t.pos[b:b + 200] == np.float32(0.25))
    pieces = t.group_count[(t.group_begin >= b) & (t.group_begin < b + 200)]
    assert list(pieces) == [64, 64, 64, 8]


def test_single_particle_tree():
    t = build_tree(np.array([[1.0, 2.0, 3.0]], np.float32), np.array([2.0], np.float32))
    assert t.n_cells == 1 and t.child_count[0] == 0 and t.L == 1
    assert t.cell_mass[0] == 2 and np.allclose(t.com[0], [1, 2, 3]) and np.all(t.quad[0] == 0)
    acc, pot, pp, pc = tree_forces(t, 0.5, 0.1)
    assert np.all(acc == 0) and np.all(pot == 0) and (pp, pc) == (1, 0)


# -- forces -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sphere16k():
    """A 16384-body Plummer sphere, its tree and float64 direct-summation forces."""
    s = plummer(16384, seed=11)
    t = build_tree(s.pos, s.mass, N_LEAF, N_CRIT)
    acc, pot = direct_forces(t.pos, t.mass, 0.05)
    return t, acc, pot


@pytest.mark.slow
def test_force_errors_grow_with_theta_and_meet_targets(sphere16k):
    t, acc_ref, pot_ref = sphere16k
    errs, pot_errs, counts = {}, {}, {}
    for theta in (0.3, 0.5, 0.75):
        acc, pot, pp, pc = tree_forces(t, theta, 0.05)
        errs[theta] = force_error_percentiles(acc, acc_ref, (50, 90, 99))
        pot_errs[theta] = np.median(np.abs(pot - pot_ref) / np.abs(pot_ref))
        counts[theta] = (pp, pc)
        assert pot_errs[theta] < 0.25 * errs[theta][0]  # potentials err less than forces
    p50, p90, p99 = errs[0.5]
    assert p50 <= 1e-3 and p99 <= 1e-2
    for lo, hi in ((0.3, 0.5), (0.5, 0.75)):
        assert all(a < b for a, b in zip(errs[lo], errs[hi]))
        assert pot_errs[lo] < pot_errs[hi]
        assert counts[lo][0] > counts[hi][0]  # fewer interactions for a larger theta
        assert sum(counts[lo]) > sum(counts[hi])


@pytest.mark.slow
def test_quadrupole_terms_help(sphere16k):
    t, acc_ref, pot_ref = sphere16k
    acc_q, pot_q, *_ = tree_forces(t, 0.5, 0.05, quadrupole=True)
    acc_m, pot_m, *_ = tree_forces(t, 0.5, 0.05, quadrupole=False)
    err_q = relative_force_errors(acc_q, acc_ref)
    err_m = relative_force_errors(acc_m, acc_ref)
    assert np.median(err_q) < 0.5 * np.median(err_m)
    assert np.percentile(err_q, 99) < 0.5 * np.percentile(err_m, 99)
    pot_err_q = np.median(np.abs(pot_q - pot_ref) / np.abs(pot_ref))
    pot_err_m = np.median(np.abs(pot_m - pot_ref) / np.abs(pot_ref))
    assert pot_err_q < 0.5 * pot_err_m


@pytest.mark.parametrize("eps", [0.05, 0.0])
def test_small_theta_reproduces_direct_summation(eps):
    """theta -> 0 opens every cell but those whose particles sit at one point (l = delta = 0,
    exact as a multipole): every pair once, the self pair left out like direct summation."""
    pos, mass = CASES["uniform777"]
    t = build_tree(pos, mass, N_LEAF, N_CRIT)
    acc, pot, pp, pc = tree_forces(t, 0.01, eps, G=2.0)
    acc_ref, pot_ref = direct_forces(t.pos, t.mass, eps, G=2.0)
    lists = interaction_lists(t, 0.01)
    assert np.all(t.extent[lists.pc_cell] == 0)
    pairs = t.group_count[lists.pp_group] * t.body_count[lists.pp_cell]
    points = t.group_count[lists.pc_group] * t.body_count[lists.pc_cell]
    assert pp == pairs.sum() and pc == t.group_count[lists.pc_group].sum()
    assert pairs.sum() + points.sum() == t.n * t.n
    assert force_error_percentiles(acc, acc_ref, (100,))[0] < 1e-5
    assert np.allclose(pot, pot_ref, rtol=1e-5, atol=0)


def test_coincident_particles_without_softening_stay_finite():
    pos, mass = degenerate(n_same=40, n_other=200)
    t = build_tree(pos, mass, N_LEAF, N_CRIT)
    acc, pot, *_ = tree_forces(t, 0.6, 0.0)
    acc_ref, pot_ref = direct_forces(t.pos, t.mass, 0.0)
    assert np.isfinite(acc).all() and np.isfinite(pot).all()
    assert np.median(relative_force_errors(acc, acc_ref)) < 1e-2


@pytest.mark.slow
def test_threads_and_parts_do_not_change_the_result(sphere16k):
    t = sphere16k[0]
    one = tree_forces(t, 0.5, 0.05, workers=1)
    three = tree_forces(t, 0.5, 0.05, workers=3)
    assert one[2:] == three[2:]  # the same interaction counts
    assert np.allclose(one[0], three[0], rtol=1e-5, atol=1e-6 * np.abs(one[0]).max())
    assert np.allclose(one[1], three[1], rtol=1e-6)


def test_bad_input_gets_a_message():
    pos, mass = CASES["uniform777"]
    t = build_tree(pos, mass)
    with pytest.raises(ParameterError, match="theta"):
        tree_forces(t, 0.0, 0.05)
    with pytest.raises(ParameterError, match="eps"):
        tree_forces(t, 0.5, -1.0)
    with pytest.raises(EngineError, match="N >= 1"):
        build_tree(np.zeros((0, 3), np.float32), np.zeros(0, np.float32))
    bad = pos.copy()
    bad[5, 1] = np.nan
    with pytest.raises(EngineError, match="NaN"):
        build_tree(bad, mass)
