"""The GPU tree equals the CPU oracle's (keys, order, cells, multipoles); the GPU's groups follow
their own rule (runs of the sorted order, split where loose), checked against a host replica."""
import numpy as np
import pytest

from galaxyview.engines.cpu.groups import make_groups
from galaxyview.engines.cpu.multipoles import compute_multipoles
from galaxyview.engines.cpu.tree import build_cells, sort_particles
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def engine():
    from galaxyview.engines.gpu.engine import GPUEngine

    eng = GPUEngine(Params(theta=0.6, eps=0.05))
    yield eng
    eng.close()


def cpu_tree(state):
    tree = build_cells(sort_particles(state.pos, state.mass), n_leaf=16)
    compute_multipoles(tree)
    make_groups(tree, 64)
    return tree


def clumpy(n, rng):
    """A Plummer sphere with a tenth of the particles stacked on one point (level-21 leaves)
    and a far, small satellite (deep, thin branches)."""
    s = plummer_sphere(n, rng)
    k = n // 10
    s.pos[:k] = s.pos[0]
    s.pos[k:2 * k] = s.pos[k:2 * k] * 1e-4 + np.float32(30.0)
    return ParticleState(s.pos, s.vel, s.mass)


def check_tree(eng, state):
    from galaxyview.engines.gpu.inspect import download_tree

    eng.load(state)
    g, c = download_tree(eng), cpu_tree(state)
    np.testing.assert_array_equal(g["frame"][:3], c.lo)
    assert g["frame"][3] == c.L and g["frame"][4] == c.scale
    np.testing.assert_array_equal(g["keys"], c.keys)
    np.testing.assert_array_equal(g["order"], c.order)
    np.testing.assert_array_equal(g["level_begin"], c.level_begin)
    for name in ("level", "body_begin", "body_count", "child_count", "parent"):
        np.testing.assert_array_equal(g[name], getattr(c, name), err_msg=name)
    inner = c.child_count > 0
    np.testing.assert_array_equal(g["child_begin"][inner], c.child_begin[inner])
    # multipoles within 1e-5 relative: com to its size plus the cell size, Q to its natural
    # scale trace + M l^2 (a single particle's Q is rounding noise about 0)
    np.testing.assert_allclose(g["cell_mass"], c.cell_mass, rtol=1e-5)
    scale = np.abs(c.com).max(axis=1) + c.size
    assert (np.abs(g["com"] - c.com).max(axis=1) <= 1e-5 * scale).all()
    q_scale = c.quad[:, :3].sum(axis=1) + c.cell_mass * c.size ** 2
    assert (np.abs(g["quad"] - c.quad).max(axis=1) <= 1e-5 * q_scale).all()
    ropen = (c.extent / eng.params.theta + c.delta).astype(np.float32)
    np.testing.assert_allclose(g["r_open2"], ropen * ropen, rtol=1e-6)
    check_groups(g, eng)


def reference_groups(keys, gmax, split):
    """Host replica of make_groups: runs of gmax sorted particles; a range whose smallest
    enclosing cell holds more than `split` particles is cut at the end of its first particle's
    child one level down, greedily from the left."""
    keys = np.asarray(keys, np.uint64)
    n, begin = len(keys), []
    for a in range(0, n, gmax):
        b = min(n, a + gmax)
        while a < b:
            e = b
            while e - a > 1 and (diff := int(keys[a]) ^ int(keys[e - 1])):
                ld = (65 - (diff.bit_length() - 1)) // 3  # first level where they differ
                s = 63 - 3 * (ld - 1)
                prefix = int(keys[a]) >> s
                lo, hi = np.searchsorted(keys, np.uint64([prefix << s, (prefix + 1) << s]))
                if hi - lo <= split:
                    break
                s -= 3  # cut where keys[a]'s child at level ld ends
                e = int(np.searchsorted(keys, np.uint64(((int(keys[a]) >> s) + 1) << s)))
            begin.append(a)
            a = e
    begin = np.array(begin, np.int64)
    return begin, np.diff(np.r_[begin, n])


def check_groups(g, eng):
    order = np.argsort(g["group_begin"])
    begin, count = g["group_begin"][order], g["group_count"][order]
    n, gmax = len(g["keys"]), eng.buf.gmax
    # contiguous, every particle once, at most gmax, never across a run of gmax
    assert begin[0] == 0 and (begin[1:] == begin[:-1] + count[:-1]).all() and count.sum() == n
    assert (count >= 1).all() and (count <= gmax).all()
    assert (begin // gmax == (begin + count - 1) // gmax).all()
    ref_begin, ref_count = reference_groups(g["keys"], gmax, eng.group_split)
    np.testing.assert_array_equal(begin, ref_begin)
    np.testing.assert_array_equal(count, ref_count)


@pytest.mark.parametrize("n", [1, 2, 17, 1000, 4097, 65537])
def test_tree_matches_cpu_plummer(engine, n):
    check_tree(engine, plummer_sphere(n, np.random.default_rng(n)))


def test_tree_matches_cpu_clumpy(engine):
    check_tree(engine, clumpy(5003, np.random.default_rng(3)))


def test_groups_fuller_than_cpu_and_compact(engine):
    """Fuller groups than the CPU engine's, and no group spans a populous cell's children."""
    from galaxyview.engines.gpu.inspect import download_tree

    state = plummer_sphere(65537, np.random.default_rng(9))
    engine.load(state)
    g, c = download_tree(engine), cpu_tree(state)
    assert g["group_count"].mean() >= 1.2 * c.group_count.mean()  # 59 and 44
    keys = g["keys"].astype(np.uint64)
    first, last = keys[g["group_begin"]], keys[g["group_begin"] + g["group_count"] - 1]
    for k0, k1 in zip(first, last):
        diff = int(k0) ^ int(k1)
        if diff:
            s = 63 - 3 * ((65 - (diff.bit_length() - 1)) // 3 - 1)  # enclosing cell's prefix
            p = int(k0) >> s
            lo, hi = np.searchsorted(keys, np.uint64([p << s, (p + 1) << s]))
            assert hi - lo <= engine.group_split


def test_tree_matches_cpu_galaxy(engine):
    from galaxyview.model.scene import load_scene

    check_tree(engine, load_scene("milky-way").build(30011))


def test_octree_overlay_boxes(engine):
    state = plummer_sphere(20000, np.random.default_rng(5))
    engine.load(state)
    c = cpu_tree(state)
    boxes = engine.tree_boxes(1, 3)
    lo, hi = c.level_begin[1], c.level_begin[4]
    assert boxes.shape == (hi - lo, 4) and boxes.dtype == np.float32
    np.testing.assert_allclose(boxes[:, :3], c.center[lo:hi], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(boxes[:, 3], c.size[lo:hi], rtol=1e-6)
    assert engine.tree_boxes(0, 0).shape == (1, 4)
