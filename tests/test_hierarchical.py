"""The hierarchical (block time step) leapfrog and the acceleration MAC on the CPU engines."""
import numpy as np
import pytest

from galaxyview.engines.cpu import CPUEngine
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.walk import AccelerationMAC, interaction_lists
from galaxyview.engines.cpu.tree import build_tree
from galaxyview.errors import EngineError, ParameterError
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState


def core_halo(n_core=150, n_halo=450, seed=3) -> ParticleState:
    """A dense core inside a wide halo: accelerations spanning ~100x."""
    rng = np.random.default_rng(seed)
    core = plummer_sphere(n_core, rng, mass=0.3, scale=0.05)
    halo = plummer_sphere(n_halo, rng, mass=0.7, scale=1.0)
    cat = lambda a, b: np.concatenate([a, b])  # noqa: E731
    return ParticleState(cat(core.pos, halo.pos), cat(core.vel, halo.vel),
                         cat(core.mass, halo.mass), cat(core.component, halo.component),
                         cat(core.galaxy, halo.galaxy))


def hier(**kw) -> Params:
    return Params(integrator="leapfrog-hier", **kw)


@pytest.mark.parametrize("gravity", ["tree", "direct"])
def test_one_level_is_the_shared_leapfrog_bitwise(gravity):
    s = plummer_sphere(700, np.random.default_rng(1))
    a = CPUEngine(Params(dt=0.01, eps=0.05, theta=0.6), gravity=gravity)
    b = CPUEngine(hier(dt=0.01, eps=0.05, theta=0.6, block_levels=0), gravity=gravity)
    for e in (a, b):
        e.load(s)
        e.step(4)
    for k in ("pos", "vel", "acc", "pot"):
        assert np.array_equal(getattr(a.system, k), getattr(b.system, k)), k
    assert b.time_steps().counts.tolist() == [700]


def test_all_on_the_finest_level_is_the_leapfrog_with_that_step():
    s = plummer_sphere(300, np.random.default_rng(2))
    a = CPUEngine(Params(dt=1 / 256, eps=0.01), gravity="direct")
    b = CPUEngine(hier(dt=1 / 32, eps=0.01, eta=1e-9, block_levels=3), gravity="direct")
    a.load(s)
    b.load(s)
    a.step(16)
    b.step(2)
    assert b.time_steps().counts[3] == 300
    assert np.array_equal(a.system.pos, b.system.pos)
    assert np.array_equal(a.system.vel, b.system.vel)


def test_levels_follow_the_acceleration_and_count_every_particle():
    eng = CPUEngine(hier(dt=0.05, eps=0.01, eta=0.01), gravity="direct")
    eng.load(core_halo())
    eng.step(1)
    level = eng.integrator.level
    ts = eng.time_steps()
    assert ts.counts.sum() == 600 and ts.levels >= 3
    assert level[:150].mean() > level[150:].mean() + 2  # the core steps far more finely
    assert 0 < ts.active_fraction < 0.5 and ts.block_steps >= 8
    # every particle's step meets the criterion sqrt(2 eta eps / |a|)
    a = np.linalg.norm(eng.system.acc, axis=1)
    crit = np.sqrt(2 * 0.01 * 0.01 / a)
    assert np.all(0.05 / 2.0 ** level <= crit * (1 + 1e-9))


def test_about_the_energy_error_of_a_fine_shared_step_for_half_the_work():
    """At this small N close encounters in the halo need fine steps too: the gain grows with
    the range of accelerations (the GPU benchmark measures it on mergers)."""
    s = core_halo(60, 540)
    shared = CPUEngine(Params(dt=1 / 512, eps=0.01), gravity="direct")
    blocks = CPUEngine(hier(dt=1 / 32, eps=0.01, eta=0.005), gravity="direct")
    err, work = {}, {}
    for name, eng, steps in (("shared", shared, 64), ("blocks", blocks, 4)):
        eng.load(s)
        e0 = eng.energies().total
        done = 0.0
        for _ in range(steps):
            eng.step(1)
            ts = eng.time_steps()
            done += 1.0 if ts is None else ts.block_steps * ts.active_fraction
        err[name] = abs(eng.energies().total - e0) / abs(e0)
        work[name] = done  # force evaluations of all particles, in units of N
    assert blocks.time_steps().levels >= 3
    assert err["blocks"] < 2 * err["shared"], (work, err)
    assert work["blocks"] < 0.6 * work["shared"], (work, err)


def test_active_subset_forces_equal_the_full_evaluation():
    eng = CPUEngine(Params(theta=0.6, eps=0.02))
    eng.load(core_halo())
    acc, pot = eng.system.acc.copy(), eng.system.pot.copy()
    active = np.flatnonzero(np.random.default_rng(0).random(600) < 0.1)
    eng.system.acc[:] = np.nan
    eng.system.forces(active)
    # the same interaction lists; float32 blocks batched otherwise: equal to float32 round-off
    assert np.allclose(eng.system.acc[active], acc[active], rtol=1e-6, atol=0)
    assert np.allclose(eng.system.pot[active], pot[active], rtol=1e-6, atol=0)
    assert eng.stats.pp + eng.stats.pc > 0


def test_exact_restart_from_a_checkpoint_mid_run():
    eng = CPUEngine(hier(dt=0.05, eps=0.01, eta=0.01), gravity="direct")
    eng.load(core_halo())
    eng.step(2)
    cp = eng.checkpoint()
    eng.step(2)
    end = eng.system.pos.copy()
    eng.set_params(eta=0.5)  # changes the levels of later steps; the restore brings them back
    eng.restore(cp)
    eng.set_params(eta=0.01)
    eng.step(2)
    assert np.array_equal(eng.system.pos, end)


def test_softening_is_needed():
    eng = CPUEngine(hier(eps=0.0), gravity="direct")
    with pytest.raises(EngineError, match="eps > 0"):
        eng.load(plummer_sphere(50, np.random.default_rng(0)))


# -- the acceleration MAC ------------------------------------------------------------------------
def test_acceleration_mac_error_falls_with_alpha_and_every_accepted_cell_is_outside():
    s = plummer_sphere(3000, np.random.default_rng(4))
    ref, _ = direct_forces(s.pos.astype(np.float64), s.mass, 0.02)
    errors = []
    for alpha in (0.02, 0.002):
        eng = CPUEngine(Params(eps=0.02, mac="acceleration", alpha=alpha))
        eng.load(s)  # the first evaluation uses Bonsai's MAC (no accelerations yet) ...
        eng.set_params(theta=0.5)  # ... a force parameter change evaluates with the relative one
        acc, _ = eng.accelerations()
        errors.append(np.median(np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1)))
    assert errors[1] < errors[0] / 2, errors
    tree = build_tree(s.pos, s.mass)
    amac = AccelerationMAC.of(tree, ref[tree.order], 1.0, 0.002)
    lists = interaction_lists(tree, 0.5, amac=amac)
    box_lo = np.minimum.reduceat(tree.pos, tree.group_begin)
    box_hi = np.maximum.reduceat(tree.pos, tree.group_begin)
    g, c = lists.pc_group, lists.pc_cell
    d = np.maximum(np.maximum(box_lo[g] - tree.com[c], tree.com[c] - box_hi[g]), 0)
    d2 = (d.astype(np.float64) ** 2).sum(1)
    assert np.all(np.sqrt(d2) > tree.extent[c] + tree.delta[c] - 1e-5)
    assert np.all(d2 ** 2 >= amac.ml2[c] * amac.ginv[g].astype(np.float64) * (1 - 1e-5))


def test_mac_and_alpha_are_checked():
    with pytest.raises(ParameterError, match="mac must be one of"):
        Params(mac="geometric")
    with pytest.raises(ParameterError, match="alpha"):
        Params(alpha=0.0)
    assert Params(mac="acceleration", alpha=0.001).alpha == 0.001


def test_acceleration_mac_is_refused_clearly_by_the_compiled_engine():
    pytest.importorskip("numba")
    from galaxyview.engines.cpu_numba.engine import NumbaEngine

    with pytest.raises(EngineError, match="acceleration MAC runs on the reference"):
        NumbaEngine(Params(eps=0.05, mac="acceleration"))
    eng = NumbaEngine(Params(eps=0.05))
    eng.load(plummer_sphere(200, np.random.default_rng(0)))
    with pytest.raises(EngineError, match="acceleration MAC runs on the reference"):
        eng.set_params(mac="acceleration", theta=0.3)  # refused when set, nothing changed
    assert eng.params.mac == "bonsai" and eng.params.theta != 0.3
    eng.step(1)
    assert eng.steps_done == 1


def test_direct_energies_are_free_of_the_tree_error():
    s = plummer_sphere(2000, np.random.default_rng(5))
    tree = CPUEngine(Params(eps=0.05, theta=1.2))
    direct = CPUEngine(Params(eps=0.05), gravity="direct")
    tree.load(s)
    direct.load(s)
    exact = direct.energies()
    assert tree.direct_energies().potential == pytest.approx(exact.potential, rel=1e-12)
    assert tree.energies().potential != pytest.approx(exact.potential, rel=1e-5)
