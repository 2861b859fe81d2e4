"""The compiled CPU engine (backend "cpu") against the numpy engine (backend "reference"):
the same tree, the same interactions, forces within 1e-5, energy conservation as good."""
import io
import sys

import numpy as np
import pytest

from galaxyview.cli.main import main
from galaxyview.engines import create_engine, resolve_backend, set_threads
from galaxyview.engines.cpu import threads
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.cpu.forces import tree_forces as numpy_forces
from galaxyview.engines.cpu.tree import build_tree as numpy_tree
from galaxyview.engines.cpu_numba import build, engine as numba_engine, unavailable_reason, walk
from galaxyview.errors import EngineError
from galaxyview.model.diagnostics import relative_force_errors
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.scene import load_scene
from galaxyview.model.state import ParticleState

STRUCTURE = ("keys", "order", "pos", "mass", "level", "body_begin", "body_count", "child_begin",
             "child_count", "parent", "level_begin", "group_begin", "group_count")
MOMENTS = ("center", "size", "cell_mass", "com", "quad", "delta", "extent")


def clumpy(n=6000, seed=5):
    """Clumps of masses spanning 1000x, a few heavy particles and a thin background."""
    rng = np.random.default_rng(seed)
    parts, masses = [], []
    for k in range(12):
        m = n // 16
        parts.append(rng.normal(rng.uniform(-4, 4, 3), 10 ** rng.uniform(-2, -0.5), (m, 3)))
        masses.append(np.full(m, 10 ** rng.uniform(-3, 0)))
    rest = n - sum(len(p) for p in parts)
    parts.append(rng.uniform(-6, 6, (rest, 3)))
    masses.append(rng.uniform(1e-4, 1e-3, rest))
    masses[-1][:5] = 5.0
    pos, mass = np.concatenate(parts), np.concatenate(masses)
    perm = rng.permutation(n)
    return pos[perm].astype(np.float32), (mass[perm] / mass.sum()).astype(np.float32)


def cases():
    p = plummer_sphere(8192, np.random.default_rng(1))
    g = load_scene("antennae").build(n=6000)
    return {"plummer": (p.pos, p.mass, 0.05), "antennae": (g.pos, g.mass, 0.05),
            "clumpy": (*clumpy(), 0.01)}


CASES = cases()


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    return CASES[request.param]


def test_the_same_tree_as_the_numpy_engine(case):
    pos, mass, _ = case
    a, b = numpy_tree(pos, mass), build.build_tree(pos, mass)
    for f in STRUCTURE:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for f in MOMENTS:  # float64 sums in another order: equal to rounding
        np.testing.assert_allclose(getattr(b, f), getattr(a, f), rtol=1e-6, atol=1e-12,
                                   err_msg=f)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_radix_sort_is_numpys_stable_argsort(seed):
    rng = np.random.default_rng(seed)
    wide = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    few = rng.integers(0, 40, 5000).astype(np.uint64) << np.uint64(50)  # many equal keys
    for keys in (wide, few, np.zeros(7, np.uint64), wide[:1]):
        order, sorted_keys = build._radix_argsort(keys)
        assert np.array_equal(order, np.argsort(keys, kind="stable"))
        assert np.array_equal(sorted_keys, keys[order])


def test_lists_longer_than_the_first_buffers():
    """theta 0.1: lists of several thousand terms, beyond the buffers a walk starts with."""
    pos, mass, eps = CASES["plummer"]
    tree = numpy_tree(pos[:6000], mass[:6000])
    a_ref, p_ref, pp_ref, pc_ref = numpy_forces(tree, 0.1, eps)
    a, p, pp, pc = walk.tree_forces(tree, 0.1, eps)
    assert (pp, pc) == (pp_ref, pc_ref) and max(pp, pc) > 5000 * 6000
    assert np.percentile(relative_force_errors(a, a_ref), 99) < 1e-5


@pytest.mark.parametrize("need", [100, 4096, 5000, 70000])
def test_list_buffers_rows_avoid_4k_aliasing(need):
    """A list buffer holds `need` terms, and its rows are not a multiple of 4 KiB apart (rows
    that are share the L1 cache's sets: list building took twice the time)."""
    for rows in (4, walk.TERMS):
        buf = walk._rows(rows, need)
        assert buf.shape[0] == rows and buf.shape[1] >= need and buf.flags.c_contiguous
        assert buf.strides[0] % 4096 != 0


def test_unsort_is_numpys_scatter():
    """The compiled engine's forces back in the loaded order: acc[order] = acc_s, as the
    numpy engine's fancy indexing."""
    rng = np.random.default_rng(3)
    order = rng.permutation(5000)
    acc_s, pot_s = rng.standard_normal((5000, 3)), rng.standard_normal(5000)
    acc, pot = walk.unsort(order, acc_s, pot_s)
    acc0, pot0 = CPUEngine()._unsort(order, acc_s, pot_s)
    assert np.array_equal(acc, acc0) and np.array_equal(pot, pot0)
    assert np.array_equal(acc[order], acc_s) and np.array_equal(pot[order], pot_s)


@pytest.mark.parametrize("theta", [0.4, 0.75])
def test_forces_match_the_numpy_engine_on_the_same_tree(case, theta):
    pos, mass, eps = case
    tree = numpy_tree(pos, mass)
    a_ref, p_ref, pp_ref, pc_ref = numpy_forces(tree, theta, eps)
    a, p, pp, pc = walk.tree_forces(tree, theta, eps)
    assert (pp, pc) == (pp_ref, pc_ref) and pc > 0 and pp > 0
    err = relative_force_errors(a, a_ref)
    assert np.percentile(err, 99) < 1e-5 and err.max() < 1e-4, (np.median(err), err.max())
    assert (np.abs(p - p_ref) / np.abs(p_ref)).max() < 1e-5


def test_engines_agree_end_to_end(case):
    pos, mass, eps = case
    n = len(mass)
    state = ParticleState(pos, np.zeros_like(pos), mass, np.zeros(n, np.int8),
                          np.zeros(n, np.int8), 0.0, {})
    out = []
    for backend in ("cpu", "reference"):
        eng, _ = create_engine(backend, Params(theta=0.6, eps=eps))
        eng.load(state)
        out.append((*eng.accelerations(), eng.stats.pp, eng.stats.pc, eng.tree_boxes(0, 30)))
    (a, p, pp, pc, boxes), (a0, p0, pp0, pc0, boxes0) = out
    assert (pp, pc) == (pp0, pc0)
    assert np.percentile(relative_force_errors(a, a0), 99) < 1e-5
    assert np.abs(p - p0).max() < 1e-5 * np.abs(p0).max()
    assert np.array_equal(boxes, boxes0)


def test_unsoftened_coincident_particles_stay_finite():
    pos = np.r_[np.zeros((40, 3)), np.random.default_rng(2).uniform(-1, 1, (60, 3))]
    mass = np.ones(100, np.float32)
    tree = numpy_tree(pos.astype(np.float32), mass)
    a, p, _, _ = walk.tree_forces(tree, 0.5, 0.0)
    a0, p0, _, _ = numpy_forces(tree, 0.5, 0.0)
    assert np.isfinite(a).all() and np.isfinite(p).all()
    np.testing.assert_allclose(a, a0, rtol=1e-5, atol=1e-5 * np.abs(a0).max())


@pytest.mark.slow
def test_energy_conservation_no_worse_than_the_reference():
    """Antennae, 2000 particles, 150 steps (docs/cpu-engine.md has 1000 steps at 20k)."""
    state = load_scene("antennae").build(n=2000)
    drift = {}
    for backend in ("cpu", "reference"):
        eng, _ = create_engine(backend, Params(theta=0.6, eps=0.05, dt=0.02))
        eng.load(state)
        e0 = eng.energies().total
        eng.step(150)
        drift[backend] = abs(eng.energies().total / e0 - 1)
    assert drift["cpu"] <= 1.2 * drift["reference"] + 1e-6, drift


def test_threads_give_identical_forces():
    p = plummer_sphere(4000, np.random.default_rng(3))
    tree = build.build_tree(p.pos, p.mass)
    try:
        set_threads(1)
        one = walk.tree_forces(tree, 0.5, 0.05)
        eng, _ = create_engine("cpu", Params())
        assert "numba, 1 thread)" in eng.device_name
        set_threads(2)
        two = walk.tree_forces(tree, 0.5, 0.05)
    finally:
        set_threads(None)
    assert np.array_equal(one[0], two[0]) and one[2:] == two[2:]


def test_thread_settings_are_checked(monkeypatch, capsys):
    monkeypatch.setenv(threads.ENV, "many")
    with pytest.raises(EngineError, match="GALAXYVIEW_THREADS"):
        create_engine("cpu", Params())
    monkeypatch.setenv(threads.ENV, "3")
    assert threads.count() == 3 and threads.workers() == 3
    with pytest.raises(SystemExit):
        main(["run", "plummer", "--threads", "0"])
    assert "--threads" in capsys.readouterr().err


def test_device_is_refused_on_the_cpu_engines(capsys):
    """--device chooses a GPU: with a CPU backend it is an error saying so, not ignored."""
    for backend in ("cpu", "reference"):
        with pytest.raises(EngineError, match="--device 1 chooses a GPU.*--threads N"):
            resolve_backend(backend, 1)
    assert resolve_backend("cpu", 0)[0] == "cpu"  # the default
    assert main(["run", "plummer", "--backend", "cpu", "--device", "1", "--n", "256",
                 "--steps", "1"]) == 2
    assert "--device 1 chooses a GPU; the CPU engines run on this machine's cores" in \
        capsys.readouterr().err


def test_threads_without_an_affinity_mask(monkeypatch):
    """macOS (and Windows) have no os.sched_getaffinity: every CPU the OS counts, at least 1."""
    monkeypatch.delattr(threads.os, "sched_getaffinity", raising=False)
    monkeypatch.delenv(threads.ENV, raising=False)
    monkeypatch.setattr(threads, "_chosen", None)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 6)
    assert threads.available_cpus() == 6 and threads.count() == 6
    monkeypatch.setattr(threads.os, "cpu_count", lambda: None)  # unknown
    assert threads.available_cpus() == 1 and threads.count() == 1 and threads.workers() == 1
    monkeypatch.setenv(threads.ENV, "3")
    assert threads.count() == 3


def test_backend_names():
    assert resolve_backend("cpu")[0] == "cpu"
    assert resolve_backend("reference")[0] == "reference"
    eng, _ = create_engine("cpu", Params())
    assert isinstance(eng, numba_engine.NumbaEngine) and eng.name == "cpu"
    assert "numba" in eng.device_name
    with pytest.raises(EngineError, match="unknown backend"):
        resolve_backend("numpy")


def test_missing_numba_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now fails
    reason = unavailable_reason()
    assert "numba" in reason and "pip install numba" in reason
    monkeypatch.setattr("galaxyview.engines.gpu_unavailable_reason", lambda d=0: "no GPU here")
    with pytest.raises(EngineError, match="--backend reference"):
        resolve_backend("cpu")
    kind, why = resolve_backend("auto")
    assert kind == "reference" and "no GPU here" in why and "pip install numba" in why


def test_auto_falls_back_when_compiling_fails(monkeypatch):
    def broken(stream=None):
        raise EngineError("the compiled CPU engine failed to build (LLVM error); use "
                          "--backend reference (numpy)")

    monkeypatch.setattr(numba_engine, "warm_up", broken)
    monkeypatch.setattr("galaxyview.engines.gpu_unavailable_reason", lambda d=0: "no GPU here")
    eng, why = create_engine("auto", Params())
    assert type(eng) is CPUEngine and "failed to build" in why
    with pytest.raises(EngineError, match="failed to build"):
        create_engine("cpu", Params())


def test_first_start_says_it_is_compiling(monkeypatch):
    """numba's cache missed the first kernels: the line shows at once, whatever the wait."""
    misses = iter(range(100))
    monkeypatch.setattr(numba_engine, "cache_misses", lambda *modules: next(misses))
    monkeypatch.setattr(numba_engine, "_warm", False)
    stream = io.StringIO()
    numba_engine.warm_up(stream, announce_after=600)
    assert "compiling the CPU engine (first start only)" in stream.getvalue()
    assert "5/5" in stream.getvalue()


def test_a_cache_load_does_not_say_compiling(monkeypatch):
    """Kernels loaded (here: already in the process): no "compiling"; a slow load (here: any)
    says "loading"; a quick one nothing (tests/test_numba_setup.py: a fresh process)."""
    warm_up = numba_engine.warm_up
    monkeypatch.setattr(numba_engine, "_warm", False)
    stream = io.StringIO()
    warm_up(stream, announce_after=0)
    assert "compiling" not in stream.getvalue()
    assert "loading the CPU engine's compiled kernels" in stream.getvalue()
    monkeypatch.setattr(numba_engine, "_warm", False)
    stream = io.StringIO()
    warm_up(stream, announce_after=600)
    assert stream.getvalue() == ""
