"""GPU forces against float64 direct summation and the CPU tree; every output written."""
import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.groups import make_groups
from galaxyview.engines.cpu.multipoles import compute_multipoles
from galaxyview.engines.cpu.tree import build_cells, sort_particles
from galaxyview.engines.cpu.forces import tree_forces
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def engine():
    from galaxyview.engines.gpu.engine import GPUEngine

    eng = GPUEngine(Params(theta=0.75, eps=0.05))
    yield eng
    eng.close()


def rel(acc, ref):
    from galaxyview.engines.gpu.inspect import relative_errors

    return relative_errors(acc, ref)


def galaxy(n):
    from galaxyview.model.scene import load_scene

    return load_scene("milky-way").build(n)


@pytest.mark.parametrize("theta", [0.4, 0.75])
@pytest.mark.parametrize("make", [lambda n: plummer_sphere(n, np.random.default_rng(7)), galaxy],
                         ids=["plummer", "galaxy"])
def test_force_error_close_to_cpu_tree(engine, make, theta):
    from galaxyview.engines.gpu.inspect import poison_outputs

    state = make(20000)
    eps = 0.05
    engine.set_params(theta=theta, eps=eps)
    engine.load(state)
    poison_outputs(engine)
    engine.refresh_forces()
    acc, pot = engine.accelerations()
    assert np.isfinite(acc).all() and np.isfinite(pot).all()
    targets = np.random.default_rng(1).choice(state.n, 2000, replace=False)
    ref_a, ref_p = direct_forces(state.pos, state.mass, eps, targets=targets)
    tree = build_cells(sort_particles(state.pos, state.mass))
    compute_multipoles(tree)
    make_groups(tree, 64)
    ca, cp, _, _ = tree_forces(tree, theta, eps)
    cpu_a = np.empty_like(ca)
    cpu_a[tree.order] = ca
    cpu_p = np.empty_like(cp)
    cpu_p[tree.order] = cp
    e_gpu, e_cpu = rel(acc[targets], ref_a), rel(cpu_a[targets], ref_a)
    for q in (50, 99):
        assert np.percentile(e_gpu, q) <= 1.2 * np.percentile(e_cpu, q) + 1e-6, q
    p_gpu = np.abs(pot[targets] - ref_p) / np.abs(ref_p)
    p_cpu = np.abs(cpu_p[targets] - ref_p) / np.abs(ref_p)
    assert np.median(p_gpu) <= 1.2 * np.median(p_cpu) + 1e-6
    # the CPU walk of the same cells with the GPU's own groups: the same interaction counts
    pp, pc = expected_counts(engine, tree, theta)
    assert abs(engine.stats.pp - pp) <= 1e-3 * pp and abs(engine.stats.pc - pc) <= 1e-3 * pc


def expected_counts(engine, tree, theta):
    """pp and pc of the CPU walk with the GPU engine's groups, accepted leaves of at most
    engine.pp_leaf particles counted as p-p pairs (as the GPU walk evaluates them)."""
    from galaxyview.engines.cpu.walk import interaction_lists
    from galaxyview.engines.gpu.inspect import download_tree

    g = download_tree(engine)
    order = np.argsort(g["group_begin"])
    tree.group_begin, tree.group_count = g["group_begin"][order], g["group_count"][order]
    lists = interaction_lists(tree, theta)
    size, n = tree.group_count, tree.body_count
    tiny = (tree.child_count[lists.pc_cell] == 0) & (n[lists.pc_cell] <= engine.pp_leaf)
    pc_pairs = size[lists.pc_group] * np.where(tiny, n[lists.pc_cell], 1)
    pp = (size[lists.pp_group] * n[lists.pp_cell]).sum() + pc_pairs[tiny].sum()
    return int(pp), int(pc_pairs[~tiny].sum())


def test_direct_kernel_matches_cpu_direct():
    from galaxyview.engines.gpu.engine import GPUEngine

    state = plummer_sphere(6001, np.random.default_rng(2))
    eng = GPUEngine(Params(eps=0.05), gravity="direct")
    try:
        eng.load(state)
        acc, pot = eng.accelerations()
        assert eng.stats.pp == state.n ** 2 and eng.stats.pc == 0
    finally:
        eng.close()
    ref_a, ref_p = direct_forces(state.pos, state.mass, 0.05)
    assert np.linalg.norm(acc - ref_a) / np.linalg.norm(ref_a) < 1e-5
    assert np.linalg.norm(pot - ref_p) / np.linalg.norm(ref_p) < 1e-5


def test_two_bodies_exact(engine):
    from galaxyview.model.state import ParticleState

    engine.set_params(theta=0.75, eps=0.05)
    state = ParticleState(np.array([[0, 0, 0], [1, 0, 0]], np.float32), np.zeros((2, 3)),
                          np.array([1.0, 2.0], np.float32))
    engine.load(state)
    acc, pot = engine.accelerations()
    ref_a, ref_p = direct_forces(state.pos, state.mass, 0.05)
    np.testing.assert_allclose(acc, ref_a, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(pot, ref_p, rtol=1e-5)


def check_size(engine, n, theta=0.75):
    """Poisoned outputs all written, and a sample of forces against float64 direct sums."""
    from galaxyview.engines.gpu.inspect import direct_reference, poison_outputs

    state = plummer_sphere(n, np.random.default_rng(n))
    engine.set_params(theta=theta, eps=0.05)
    engine.load(state)
    poison_outputs(engine)
    engine.refresh_forces()
    acc, pot = engine.accelerations()
    assert acc.shape == (n, 3) and np.isfinite(acc).all() and np.isfinite(pot).all()
    targets = np.random.default_rng(0).choice(n, min(n, 512), replace=False)
    ref_a, ref_p = direct_reference(engine, targets)
    if n > 1:
        e = rel(acc[targets], ref_a)
        assert np.median(e) < 3e-3 and np.percentile(e, 99) < 3e-2, (np.median(e), e.max())
        assert np.median(np.abs(pot[targets] - ref_p) / np.abs(ref_p)) < 1e-3
    else:
        assert (acc == 0).all() and (pot == 0).all()
    return state


@pytest.mark.parametrize("n", [1, 3, 1000, 1001, 65537, 1_000_003])
def test_sizes(engine, n):
    check_size(engine, n)


@pytest.mark.slow
@pytest.mark.parametrize("n", [4_194_304, 16_777_216 + 5])
def test_large_sizes(engine, n):
    check_size(engine, n)
    if n > 16_000_000:
        assert engine.device_memory_bytes() / n <= 200


def test_coincident_particles(engine):
    """140 000 particles at one point (one leaf at the deepest level, far more than N_leaf)
    inside a Plummer sphere: finite forces that match float64 direct sums."""
    from galaxyview.engines.gpu.inspect import direct_reference
    from galaxyview.model.state import ParticleState

    ball = plummer_sphere(20000, np.random.default_rng(9))
    k = 140_000
    pos = np.concatenate([ball.pos, np.full((k, 3), 0.25, np.float32)])
    mass = np.concatenate([ball.mass, np.full(k, ball.mass[0], np.float32)])
    state = ParticleState(pos, np.zeros_like(pos), mass)
    engine.set_params(theta=0.75, eps=0.05)
    engine.load(state)
    acc, pot = engine.accelerations()
    assert np.isfinite(acc).all() and np.isfinite(pot).all()
    targets = np.concatenate([np.random.default_rng(0).choice(20000, 300, replace=False),
                              20000 + np.arange(0, k, k // 50)])
    ref_a, ref_p = direct_reference(engine, targets)
    e = rel(acc[targets], ref_a)
    assert np.median(e) < 3e-3 and np.percentile(e, 99) < 3e-2
    assert np.median(np.abs(pot[targets] - ref_p) / np.abs(ref_p)) < 1e-3
