"""Planetary rings on the CPU engine: the symplectic epicycle integrator against Hill's
analytic epicycles, the shear-periodic boundary, ghost boxes in the gravity, hard-sphere
collisions (exact two-sphere results, momentum, each pair once), the ring scenes."""
import math

import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.cpu.forces import tree_forces
from galaxyview.engines.cpu.groups import make_groups
from galaxyview.engines.cpu.multipoles import compute_multipoles
from galaxyview.engines.cpu.tree import build_cells, sort_particles
from galaxyview.errors import EngineError, ParameterError, SceneError
from galaxyview.model import collide
from galaxyview.model.params import Params
from galaxyview.model.ring_stats import ring_stats, wake_pitch_angle
from galaxyview.model.scene import load_scene, parse_scene
from galaxyview.model.sheet import Sheet
from galaxyview.model.state import ParticleState
from galaxyview.model.units import G_SI

OMEGA = 1.3e-4


def hill(x0, v0, omega, t):
    """Hill's equations solved: position and velocity at time t from x0, v0 at 0."""
    x, y, z = x0
    vx, vy, vz = v0
    s, c = math.sin(omega * t), math.cos(omega * t)
    pos = (4 * x + 2 * vy / omega + vx / omega * s - (3 * x + 2 * vy / omega) * c,
           y - 2 * vx / omega + (6 * x + 4 * vy / omega) * s + 2 * vx / omega * c
           - (6 * omega * x + 3 * vy) * t,
           z * c + vz / omega * s)
    vel = (vx * c + (3 * omega * x + 2 * vy) * s,
           (6 * omega * x + 4 * vy) * c - 2 * vx * s - (6 * omega * x + 3 * vy),
           -z * omega * s + vz * c)
    return np.array(pos), np.array(vel)


def sheet_engine(sheet, pos, vel, mass=None, radius=None, collision="none", dt=None,
                 gravity="direct", eps=0.0, theta=0.75):
    n = len(pos)
    p = Params(integrator="sei", boundary="shear-periodic", collision=collision, sheet=sheet,
               dt=dt or sheet.period / 50, eps=eps, G=G_SI, theta=theta)
    eng = CPUEngine(p, gravity=gravity)
    mass = np.ones(n) if mass is None else mass
    eng.load(ParticleState(np.zeros((n, 3)), np.zeros((n, 3)), mass,
                           radius=np.zeros(n) if radius is None else radius))
    eng.system.pos[:], eng.system.vel[:] = pos, vel  # float64, exact
    return eng


def test_sei_follows_the_epicycle_to_round_off_for_1000_orbits():
    sheet = Sheet(OMEGA, 1e4, 1e4, self_gravity=False)
    x0, v0 = np.array([30.0, -20.0, 5.0]), np.array([4e-3, -1.5 * OMEGA * 30 + 2e-3, 1e-3])
    eng = sheet_engine(sheet, x0[None], v0[None], dt=sheet.period / 10)
    for _ in range(10):
        eng.step(1000)
        pos, vel = hill(x0, v0, OMEGA, eng.time)
        scale = np.abs(pos).max()
        pos[1] -= sheet.ly * math.floor(pos[1] / sheet.ly + 0.5)  # y is periodic
        assert np.abs(eng.system.pos[0] - pos).max() < 1e-9 * scale
        assert np.abs(eng.system.vel[0] - vel).max() < 1e-9 * np.abs(vel).max()
    assert eng.time / sheet.period == pytest.approx(1000)


def test_boundary_keeps_a_crossing_particle_on_its_guiding_centre_orbit():
    sheet = Sheet(OMEGA, 100.0, 80.0, self_gravity=False)
    # guiding centre at x = 45, epicycle amplitude 20: it crosses x = 50 and back, many times
    x0 = np.array([45.0, 0.0, 0.0])
    v0 = np.array([20 * OMEGA, -1.5 * OMEGA * 45, 0.0])
    eng = sheet_engine(sheet, x0[None], v0[None], dt=sheet.period / 37)
    crossed = 0
    for _ in range(37 * 20):
        eng.step(1)
        pos, vel = hill(x0, v0, OMEGA, eng.time)
        k = math.floor(pos[0] / sheet.lx + 0.5)  # the box the free particle is in
        crossed += k != 0
        pos[0] -= k * sheet.lx
        pos[1] += k * sheet.shift(eng.time)
        pos[1] -= sheet.ly * math.floor(pos[1] / sheet.ly + 0.5)
        vel[1] += k * 1.5 * OMEGA * sheet.lx
        got = eng.system.pos[0]
        dy = (got[1] - pos[1] + sheet.ly / 2) % sheet.ly - sheet.ly / 2
        assert abs(got[0] - pos[0]) < 1e-8 and abs(dy) < 1e-7 and abs(got[2]) < 1e-12
        assert np.abs(eng.system.vel[0] - vel).max() < 1e-10
        assert -sheet.lx / 2 <= got[0] < sheet.lx / 2 and -sheet.ly / 2 <= got[1] < sheet.ly / 2
    assert crossed > 100


def test_ghost_boxes_in_tree_and_direct_gravity_match_explicit_images():
    rng = np.random.default_rng(1)
    sheet = Sheet(OMEGA, 40.0, 60.0)
    n = 600
    pos = np.c_[rng.uniform(-20, 20, n), rng.uniform(-30, 30, n), rng.normal(0, 1, n)]
    mass = rng.uniform(0.5, 1.5, n)
    ghosts, _ = sheet.ghost_offsets(1234.5)
    assert len(ghosts) == 8 and len(sheet.ghost_offsets(0.0, 2)[0]) == 24
    # explicit images as extra particles, targets the originals
    images = np.concatenate([pos] + [pos + o for o in ghosts])
    ref, ref_pot = direct_forces(images, np.tile(mass, 9), 0.1, targets=np.arange(n))
    acc, pot = direct_forces(pos, mass, 0.1, ghosts=ghosts)
    np.testing.assert_allclose(acc, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(pot, ref_pot, rtol=1e-12)
    # the tree: its own image plus 8 ghost walks, within the tree's tolerance
    tree = build_cells(sort_particles(pos.astype(np.float32), mass), 16)
    make_groups(tree, 64)
    compute_multipoles(tree)
    a, q, _, _ = tree_forces(tree, 0.5, 0.1)
    for o in ghosts:
        ga, gq, _, _ = tree_forces(tree, 0.5, 0.1, offset=o)
        a, q = a + ga, q + gq
    got = np.empty_like(a)
    got[tree.order] = a
    err = np.linalg.norm(got - ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert np.percentile(err, 99) < 5e-3
    # the offset of a far image: only it changes the force
    assert np.abs(got - direct_forces(pos, mass, 0.1)[0]).max() > 1e-3 * np.abs(ref).max()


def test_engine_gravity_includes_ghosts_tree_against_direct():
    rng = np.random.default_rng(2)
    sheet = Sheet(OMEGA, 50.0, 50.0)
    n = 400
    pos = np.c_[rng.uniform(-25, 25, (n, 2)), rng.normal(0, 1, n)]
    vel = np.zeros((n, 3))
    out = {}
    for gravity in ("tree", "direct"):
        # (theta 0.6: on this sparse patch the error of 0.75 before the MAC took the cells'
        # particle boxes; a missing ghost ring errs by tens of percent)
        eng = sheet_engine(sheet, pos, vel, mass=np.full(n, 1e6), gravity=gravity, eps=0.5,
                           theta=0.6)
        eng.system.time = 777.0
        eng.integrator.start()
        out[gravity] = eng.system.acc.copy()
    ref = out["direct"]
    err = np.linalg.norm(out["tree"] - ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert np.percentile(err, 99) < 1e-2


# -- two-sphere collisions ----------------------------------------------------------------------
def collide_two(x1, x2, v1, v2, m1, m2, eps):
    pos, vel = np.array([x1, x2], float), np.array([v1, v2], float)
    pairs = collide.touching(pos, np.array([1.0, 1.0]))
    done, _ = collide.resolve(pairs, pos, vel, np.array([m1, m2]), lambda vn: np.full_like(vn, eps),
                           np.arange(len(pairs)))
    return vel, done


@pytest.mark.parametrize("eps", [1.0, 0.5])
def test_two_spheres_head_on(eps):
    m1, m2, u1, u2 = 2.0, 3.0, 0.7, -0.4
    vel, done = collide_two([0, 0, 0], [1.9, 0, 0], [u1, 0, 0], [u2, 0, 0], m1, m2, eps)
    assert done == 1
    M = m1 + m2
    w1 = (m1 * u1 + m2 * u2 + m2 * eps * (u2 - u1)) / M
    w2 = (m1 * u1 + m2 * u2 + m1 * eps * (u1 - u2)) / M
    np.testing.assert_allclose(vel[:, 0], [w1, w2], rtol=1e-14)
    assert np.all(vel[:, 1:] == 0)
    p0, p1 = m1 * u1 + m2 * u2, m1 * vel[0, 0] + m2 * vel[1, 0]
    assert abs(p1 - p0) <= 1e-12 * (m1 * abs(u1) + m2 * abs(u2))


@pytest.mark.parametrize("eps", [1.0, 0.5])
def test_two_spheres_oblique(eps):
    m1, m2 = 1.0, 4.0
    n = np.array([1.0, 1.0, 0.5]) / 1.5  # unit line of centres
    v1, v2 = np.array([0.3, -0.2, 0.1]), np.array([-0.5, 0.2, 0.05])
    vel, done = collide_two([0, 0, 0], 1.95 * n, v1, v2, m1, m2, eps)
    assert done == 1
    vn = (v2 - v1) @ n
    assert vn < 0
    j = (1 + eps) * vn * m1 * m2 / (m1 + m2)  # impulse on 1 along n
    np.testing.assert_allclose(vel[0], v1 + j / m1 * n, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(vel[1], v2 - j / m2 * n, rtol=1e-13, atol=1e-15)
    # tangential components unchanged, normal relative velocity reversed times eps
    assert (vel[1] - vel[0]) @ n == pytest.approx(-eps * vn, rel=1e-13)
    t = np.cross(n, [0, 0, 1.0])
    assert (vel[1] - vel[0]) @ t == pytest.approx((v2 - v1) @ t, rel=1e-13)
    p0, p1 = m1 * v1 + m2 * v2, m1 * vel[0] + m2 * vel[1]
    assert np.abs(p1 - p0).max() <= 1e-12 * np.abs(p0).max()


def test_receding_or_distant_spheres_are_left_alone():
    vel, done = collide_two([0, 0, 0], [1.9, 0, 0], [-0.1, 0, 0], [0.1, 0, 0], 1, 1, 0.5)
    assert done == 0 and vel[0, 0] == -0.1
    vel, done = collide_two([0, 0, 0], [2.1, 0, 0], [0.1, 0, 0], [-0.1, 0, 0], 1, 1, 0.5)
    assert done == 0


def sequential(pairs, pos, vel, mass, eps, order):
    """The reference: the pairs one after the other in `order`."""
    done = 0
    for p in order:
        i, j = pairs.i[p], pairs.j[p]
        d = pos[j] + pairs.dpos[p] - pos[i]
        n = d / np.linalg.norm(d)
        vn = (vel[j] + pairs.dvel[p] - vel[i]) @ n
        if vn < 0:
            dv = -(1 + eps) * vn * n
            vel[i] -= mass[j] / (mass[i] + mass[j]) * dv
            vel[j] += mass[i] / (mass[i] + mass[j]) * dv
            done += 1
    return done


def test_many_touching_pairs_each_resolved_once_as_in_sequence():
    rng = np.random.default_rng(5)
    n = 3000
    pos = rng.uniform(-10, 10, (n, 3))
    radius = rng.uniform(0.3, 0.6, n)
    mass = radius ** 3
    vel = rng.normal(0, 1, (n, 3))
    pairs = collide.touching(pos, radius)
    assert len(pairs) > 300 and len(pairs.keys()) == len(pairs)
    assert np.all(pairs.i < pairs.j)
    brute = {(i, j) for i in range(n) for j in np.flatnonzero(
        np.linalg.norm(pos[i + 1:] - pos[i], axis=1) < radius[i] + radius[i + 1:]) + i + 1}
    assert pairs.keys() == brute
    many = np.bincount(np.r_[pairs.i, pairs.j], minlength=n)
    assert many.max() >= 3  # particles hitting several others in one step
    priority = rng.permutation(len(pairs))
    v_rounds, v_seq = vel.copy(), vel.copy()
    done, deferred = collide.resolve(pairs, pos, v_rounds, mass,
                                     lambda vn: np.full_like(vn, 0.5), priority)
    done_seq = sequential(pairs, pos, v_seq, mass, 0.5, np.argsort(priority))
    assert done == done_seq and 0 < done <= len(pairs) and deferred == 0
    np.testing.assert_allclose(v_rounds, v_seq, rtol=0, atol=1e-14)
    p0, p1 = mass @ vel, mass @ v_rounds
    assert np.abs(p1 - p0).max() <= 1e-12 * (mass @ np.abs(vel)).max()


def test_rounds_run_out_in_a_deep_clump_the_rest_wait_for_the_next_step():
    """Spheres sunk deep into each other (a time step too long): the rounds a step are bounded;
    the pairs left are resolved in the next step, with momentum exact throughout."""
    rng = np.random.default_rng(8)
    n = 400
    pos = rng.normal(0, 1.0, (n, 3))  # a clump: every sphere touches dozens
    radius = np.full(n, 1.0)
    mass = rng.uniform(1, 2, n)
    vel = -0.1 * pos + rng.normal(0, 0.01, (n, 3))  # falling in
    pairs = collide.touching(pos, radius)
    assert np.bincount(np.r_[pairs.i, pairs.j]).max() > 50
    priority = rng.permutation(len(pairs))
    p0 = mass @ vel
    v1 = vel.copy()
    done, deferred = collide.resolve(pairs, pos, v1, mass, lambda vn: np.full_like(vn, 0.5),
                                     priority, rounds_max=8)
    assert done > 0 and deferred > 0
    assert np.abs(mass @ v1 - p0).max() <= 1e-12 * (mass @ np.abs(vel)).max()
    # uncapped, the same pairs take hundreds of rounds
    v2 = vel.copy()
    full, left = collide.resolve(pairs, pos, v2, mass, lambda vn: np.full_like(vn, 0.5),
                                 priority, rounds_max=10**6)
    assert left == 0 and full > done
    _, left = collide.resolve(pairs, pos, vel.copy(), mass, lambda vn: np.full_like(vn, 0.5),
                              priority)
    assert left > 0  # beyond collide.ROUNDS_MAX
    # the deferred pairs are found again next step and resolved then
    done2, _ = collide.resolve(pairs, pos, v1, mass, lambda vn: np.full_like(vn, 0.5),
                               priority, rounds_max=10**6)
    assert done2 > 0 and np.abs(mass @ v1 - p0).max() <= 1e-12 * (mass @ np.abs(vel)).max()


def test_pairs_across_the_shear_boundary_use_the_image_velocity():
    sheet = Sheet(OMEGA, 20.0, 20.0, restitution="constant", eps_n=1.0)
    t = 5000.0
    gpos, gvel = sheet.ghost_offsets(t, 1)
    # particle 0 near x = +Lx/2; particle 1 just inside -Lx/2, whose image at +Lx is touching 0
    s = sheet.shift(t)
    p1 = np.array([-9.5, 3.0, 0.0])
    p0 = p1 + np.array([sheet.lx, -s, 0.0]) - np.array([1.2, 0.9, 0.0])
    p0[1] -= sheet.ly * math.floor(p0[1] / sheet.ly + 0.5)
    pos = np.array([p0, p1])
    pairs = collide.touching(pos, np.array([1.0, 1.0]), gpos, gvel)
    assert len(pairs) == 1 and (pairs.i[0], pairs.j[0]) == (0, 1)
    np.testing.assert_allclose(pairs.dvel[0], [0, -1.5 * OMEGA * sheet.lx, 0])
    # at rest on the shear flow each: the image moves at -3/2 Omega x like its neighbours
    vel = np.array([[0, -1.5 * OMEGA * p0[0], 0], [-0.01, -1.5 * OMEGA * p1[0], 0]])
    d = pos[1] + pairs.dpos[0] - pos[0]
    np.testing.assert_allclose(d, [1.2, 0.9, 0], atol=1e-12)
    rel = vel[1] + pairs.dvel[0] - vel[0]  # the shear between x = 9.3 and the image at 10.5
    np.testing.assert_allclose(rel, [-0.01, -1.5 * OMEGA * 1.2, 0], rtol=1e-9)
    before = vel.sum(axis=0)
    done, _ = collide.resolve(pairs, pos, vel, np.ones(2), sheet.restitution_of, np.arange(1))
    assert done == 1
    np.testing.assert_allclose(vel.sum(axis=0), before, rtol=0, atol=1e-15)


def test_wake_pitch_angle_of_known_stripes():
    sheet = Sheet(OMEGA, 500.0, 500.0)
    rng = np.random.default_rng(4)
    for m, n_ in ((8, 3), (-8, 3), (5, 4)):  # stripes along (-n, m)
        xy = rng.uniform(-250, 250, (400_000, 2))
        density = 1 + 0.9 * np.cos(2 * np.pi * (m * xy[:, 0] + n_ * xy[:, 1]) / 500)
        keep = rng.uniform(0, 2, len(xy)) < density
        pos = np.c_[xy[keep], np.zeros(keep.sum())]
        expected = math.degrees(math.atan2(-n_, m))
        expected = (expected + 90) % 180 - 90  # an axis: -90..90
        assert wake_pitch_angle(pos, sheet) == pytest.approx(expected, abs=2.0), (m, n_)


def test_bridges_law():
    sheet = Sheet(OMEGA, 1.0, 1.0)
    vc = sheet.v_c
    np.testing.assert_allclose(sheet.restitution_of(np.array([-vc / 10, vc, -10 * vc])),
                               [1.0, 1.0, 10 ** -0.234])
    assert np.all(Sheet(OMEGA, 1, 1, restitution="constant", eps_n=0.3)
                  .restitution_of(np.ones(3)) == 0.3)


# -- parameters and scenes ----------------------------------------------------------------------
@pytest.mark.parametrize("bad, words", [
    (dict(omega=0), "omega"), (dict(lx=-1), "lx"), (dict(eps_n=1.5), "eps_n"),
    (dict(restitution="rubber"), "restitution"), (dict(ghosts=9), "ghosts"),
    (dict(self_gravity=1), "self_gravity")])
def test_sheet_values_are_checked(bad, words):
    args = dict(omega=OMEGA, lx=10.0, ly=10.0) | bad
    with pytest.raises(ParameterError, match=words):
        Sheet(**args)


def test_sheet_modules_without_a_sheet_say_so():
    eng = CPUEngine(Params(integrator="sei"), gravity="direct")
    with pytest.raises(EngineError, match="sheet"):
        eng.load(ParticleState(np.zeros((2, 3)) + [[0, 0, 0], [1, 0, 0]], np.zeros((2, 3)),
                               np.ones(2)))


def test_live_restitution_change_and_fixed_box():
    sheet = Sheet(OMEGA, 10.0, 10.0, self_gravity=False)
    eng = sheet_engine(sheet, np.zeros((1, 3)), np.zeros((1, 3)))
    eng.set_params(sheet=sheet.with_(restitution="constant", eps_n=0.2))
    assert eng.params.sheet.eps_n == 0.2 and eng.params.sheet.restitution == "constant"
    with pytest.raises(EngineError, match="fixed"):
        eng.set_params(sheet=sheet.with_(lx=20.0))


def test_ring_scenes_load_and_build_without_overlaps():
    for name in ("ring-equilibrium", "saturn-a-ring"):
        scene = load_scene(name)
        state = scene.build(1500)
        sheet = state.meta["sheet"]
        assert scene.params.integrator == "sei" and scene.params.G == G_SI
        assert len(collide.touching(state.pos, state.radius, *sheet.ghost_offsets(0, 1))) == 0
        assert np.all(np.abs(state.pos[:, 0]) <= sheet.lx / 2)
        assert np.all(state.radius > 0)
    a = load_scene("saturn-a-ring").build(3000)
    r = a.radius
    assert 1.0 <= r.min() and r.max() <= 4.0 and np.mean(r < 2) > 0.6  # r^-3: mostly small


def test_hill_ratio_is_the_pair_hill_radius_over_the_contact_distance():
    """r_h = R_Hill(pair) / (2 r) with R_Hill = a (2 m / (3 M))^(1/3), M from Omega and a; Salo
    et al. (2004): 0.82 (rho / 900 kg/m^3)^(1/3) (a / 100,000 km) for Saturn."""
    from dataclasses import replace

    from galaxyview.model.ics.ring import hill_ratio

    cfg = load_scene("saturn-a-ring").config
    a = 1.3e8  # m
    m_saturn = cfg.omega ** 2 * a ** 3 / G_SI
    for rho in (300.0, 450.0, 900.0):
        r = 1.0
        m = rho * 4 / 3 * np.pi * r ** 3
        expect = a * (2 * m / (3 * m_saturn)) ** (1 / 3) / (2 * r)
        assert hill_ratio(replace(cfg, density=rho)) == pytest.approx(expect, rel=1e-9)
        assert hill_ratio(replace(cfg, density=rho)) == pytest.approx(
            0.82 * (rho / 900) ** (1 / 3) * 1.3, rel=0.01)


def test_ring_scene_errors_are_clear(tmp_path):
    base = {"scene": {"name": "r", "description": "d", "seed": 1, "n_cpu": 10, "n_gpu": 10},
            "units": {"system": "si"},
            "model": {"type": "ring", "omega": 1e-4, "radius_min": 1.0,
                      "particle_density": 900.0}}
    with pytest.raises(SceneError, match="optical_depth or surface_density"):
        parse_scene(base, tmp_path / "r.toml")
    bad = dict(base, units={"system": "si", "length_kpc": 1.0})
    bad["model"] = dict(base["model"], optical_depth=0.5)
    with pytest.raises(SceneError, match="length_kpc"):
        parse_scene(bad, tmp_path / "r.toml")
    bad = dict(base, model=dict(base["model"], optical_depth=0.5, self_gravity="no"))
    with pytest.raises(SceneError, match="true or false"):
        parse_scene(bad, tmp_path / "r.toml")


def test_ring_restarts_exactly_from_its_exact_state():
    scene = load_scene("ring-equilibrium")
    state = scene.build(800)
    params = scene.params.with_(sheet=state.meta["sheet"])
    a = CPUEngine(params)
    a.load(state)
    a.step(30)
    b = CPUEngine(Params(**{**vars(params), "sheet": vars(params.sheet)}))  # as archives do
    b.load_exact(a.exact_state())
    a.step(30)
    b.step(30)
    assert a.stats.collisions > 0
    np.testing.assert_array_equal(a.system.pos, b.system.pos)
    np.testing.assert_array_equal(a.system.vel, b.system.vel)


def test_overlapping_spheres_at_the_start_are_separated_not_exploded():
    scene = load_scene("ring-equilibrium")
    state = scene.build(1000)
    sheet = state.meta["sheet"]
    state.radius = state.radius * np.float32(1.3)  # now many overlap, across the edges too
    ghosts = sheet.ghost_offsets(0.0, 1)
    assert len(collide.touching(state.pos, state.radius, *ghosts)) > 50
    eng = CPUEngine(scene.params.with_(sheet=sheet))
    eng.load(state)
    s = eng.system
    p = collide.touching(s.pos, s.radius, *ghosts)
    depth = s.radius[p.i] + s.radius[p.j] - np.linalg.norm(s.pos[p.j] + p.dpos - s.pos[p.i],
                                                          axis=1)
    assert len(p) == 0 or depth.max() < 1e-5
    np.testing.assert_array_equal(s.vel, state.vel.astype(np.float64))  # no kick
    m = s.mass
    np.testing.assert_allclose(m @ s.pos / m.sum(), m @ state.pos.astype(np.float64) / m.sum(),
                               atol=1e-9 * sheet.lx)
    moved = np.linalg.norm(s.pos - state.pos, axis=1)
    assert moved.max() < 2 * s.radius.max()  # nudged apart, not scattered
    eng.step(50)  # and the ring runs on calmly
    stats = ring_stats(s.pos, s.vel, s.mass, s.radius, sheet, eng.time)
    assert max(stats.dispersion) < 20 * sheet.omega * 1.3


def test_ring_statistics_from_a_sample_of_the_engine():
    """The window measures the ring on every k-th particle (Engine.sample_state), not the whole
    state: the sample's rows are the state's, and its statistics are the whole patch's."""
    scene = load_scene("ring-equilibrium")
    state = scene.build(20000)
    sheet = state.meta["sheet"]
    rng = np.random.default_rng(2)
    state.vel = state.vel + rng.normal(0, 4e-4, state.vel.shape).astype(np.float32)
    eng = CPUEngine(scene.params.with_(sheet=sheet, collision="none"), gravity="tree")
    eng.load(state)
    full = eng.state()
    index, part = eng.sample_state(2000)
    assert 1900 <= part.n <= 2100 and len(index) == part.n
    np.testing.assert_array_equal(part.pos, full.pos[index])
    np.testing.assert_array_equal(part.radius, full.radius[index])
    whole = ring_stats(full.pos, full.vel, full.mass, full.radius, sheet, full.time)
    some = ring_stats(part.pos, part.vel, part.mass, part.radius, sheet, part.time, full.n)
    assert some.optical_depth == pytest.approx(whole.optical_depth, rel=0.03)
    assert some.filling_factor == pytest.approx(whole.filling_factor, rel=0.05)
    np.testing.assert_allclose(some.dispersion, whole.dispersion, rtol=0.05)
    assert some.thickness == pytest.approx(whole.thickness, rel=0.05)


def test_fixed_spheres_report_the_overlaps_of_others_across_the_edges():
    sheet = Sheet(OMEGA, 40.0, 40.0)
    rng = np.random.default_rng(11)
    pos = np.c_[rng.uniform(-20, 20, (800, 2)), rng.normal(0, 1, 800)]
    radius = rng.uniform(0.5, 1.5, 800)
    ghost_pos = sheet.ghost_offsets(300.0, 1)[0]
    fixed = collide.Fixed(pos[:600], radius[:600], ghost_pos)
    got = fixed.hit(pos[600:], radius[600:])
    images = np.concatenate([pos[:600]] + [pos[:600] + o for o in ghost_pos])
    r_img = np.tile(radius[:600], 1 + len(ghost_pos))
    d = np.linalg.norm(pos[600:, None, :] - images[None], axis=2)
    want = (d < radius[600:, None] + r_img[None]).any(axis=1)
    assert want.sum() > 20 and np.array_equal(got, want)
