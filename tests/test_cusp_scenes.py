"""The cusp scenes (m31-cusp, m31-cusp-merger): their model, the velocities of a cusp drawn in
the softened potential, stratified radii, and a short run that keeps the cusp."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from galaxyview.engines import create_engine
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.model.ics.galaxy import build_galaxy, galaxy_counts
from galaxyview.model.ics.jeans import _softened
from galaxyview.model.ics.profiles import Spherical
from galaxyview.model.scene import load_scene
from galaxyview.model.state import Component

TOOL = Path(__file__).resolve().parents[1] / "tools" / "cusp_equilibrium.py"


def cusp_tool():
    spec = importlib.util.spec_from_file_location("cusp_equilibrium", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def m31_configs():
    single = load_scene("m31-cusp")
    merger = load_scene("m31-cusp-merger")
    return [single.config] + [m.galaxy for m in merger.config.members]


def test_both_scenes_load_with_m31s_published_model_and_20_pc_softening():
    for name in ("m31-cusp", "m31-cusp-merger"):
        scene = load_scene(name)
        assert scene.units.length_kpc == 1.0 and scene.params.eps == pytest.approx(0.02)
        assert scene.params.dt <= 1.0 / 128 and scene.n_gpu >= 1_000_000
    for config in m31_configs():  # Fardal et al. (2007): 1e10 Msun, kpc
        assert config.bulge.kind == "hernquist"
        assert (config.bulge.mass, config.bulge.scale) == pytest.approx((3.24, 0.61))
        assert (config.disk.mass, config.disk.scale_length) == pytest.approx((3.66, 5.4))
        assert config.halo.kind == "nfw"
        assert (config.halo.mass, config.halo.scale, config.halo.truncation) == pytest.approx(
            (88.0, 7.63, 195.0))
        assert config.black_hole == pytest.approx(0.014)  # 1.4e8 Msun
        assert config.softening == pytest.approx(0.02)


def test_merger_is_slightly_bound_with_a_5_kpc_pericentre_and_two_black_holes():
    scene = load_scene("m31-cusp-merger")
    orbit = scene.config.members[1].orbit
    assert 0.8 <= orbit.eccentricity < 1.0 and orbit.pericentre == pytest.approx(5.0)
    state = scene.build(4000)
    holes = state.component == Component.BLACK_HOLE
    assert holes.sum() == 2 and sorted(state.galaxy[holes]) == [0, 1]
    assert state.mass[holes] == pytest.approx([0.014, 0.014])
    # the first pericentre comes within the scene's first Gyr (time unit 4.71 Myr)
    assert 0 < state.meta["t_pericentre"][0] * scene.units.time_myr < 300


def _half_mass(r, m):
    order = np.argsort(r)
    cum = np.cumsum(m[order])
    return r[order][np.searchsorted(cum, 0.5 * cum[-1])]


def _analytic_half_mass(profile):
    r = np.geomspace(1e-3, profile.truncation, 20001)
    return np.interp(0.5 * profile.mass, profile.enclosed_mass(r), r)


def test_built_galaxy_has_the_masses_and_half_mass_radii_of_the_model():
    scene = load_scene("m31-cusp")
    config = scene.config
    state = scene.build(30000)
    pos, mass = state.pos.astype(float), state.mass.astype(float)
    for code, part in ((Component.BULGE, config.bulge), (Component.HALO, config.halo),
                       (Component.DISK, config.disk)):
        assert mass[state.component == code].sum() == pytest.approx(part.mass, rel=1e-5)
    hole = state.component == Component.BLACK_HOLE
    assert hole.sum() == 1 and mass[hole][0] == pytest.approx(0.014)
    assert np.linalg.norm(pos[hole][0]) < 1e-3  # at the centre (within 1 pc)
    r = np.linalg.norm(pos, axis=1)
    for code, part in ((Component.BULGE, config.bulge), (Component.HALO, config.halo)):
        mine = state.component == code
        assert _half_mass(r[mine], mass[mine]) == pytest.approx(_analytic_half_mass(part),
                                                                rel=0.01)
    disk = state.component == Component.DISK
    R = np.hypot(pos[disk, 0], pos[disk, 1])
    x = np.linspace(0.0, 10.0, 100001)  # exponential disk drawn out to 10 h
    m = 1.0 - (1.0 + x) * np.exp(-x)
    half = 5.4 * np.interp(0.5 * m[-1], m, x)
    assert _half_mass(R, mass[disk]) == pytest.approx(half, rel=0.03)
    # the bulge, 30 times lighter a particle than the halo, has 44% of the particles
    assert (state.component == Component.BULGE).mean() == pytest.approx(0.44, abs=0.01)


def test_stratified_radii_realise_the_enclosed_mass_to_one_particle():
    """Poisson radii would miss it by sqrt(n F (1 - F)), up to 70 particles here."""
    n = 20000
    for profile in (Spherical("nfw", 88.0, 7.63, 195.0), Spherical("hernquist", 3.24, 0.61, 12.0)):
        r = profile.sample_radii(n, np.random.default_rng(1))
        probe = np.geomspace(0.01, 0.99 * profile.truncation, 60)
        expected = n * profile.enclosed_mass(probe) / profile.mass
        counts = np.searchsorted(np.sort(r), probe)
        assert np.max(np.abs(counts - expected)) <= 2.0


@pytest.mark.slow
def test_softened_pull_matches_direct_summation_of_a_cusp_round_a_black_hole():
    """The Jeans tables' softened pull g(r) against the mean radial force that direct summation
    (Plummer softening, eps 20 pc) of 200,000 bulge particles and the hole exerts round
    spheres of radius r; the Newtonian M(r)/r^2 is 10-800% off there."""
    eps, hole = 0.02, 0.014
    bulge = Spherical("hernquist", 3.24, 0.61, 12.0)
    r = np.geomspace(1e-5, 50.0, 2048)
    mass = bulge.enclosed_mass(r) + hole
    phi, g = _softened(r, mass, hole, eps)
    rng = np.random.default_rng(2)
    n = 200000
    radii = bulge.sample_radii(n, rng)
    dirs = rng.standard_normal((n, 3))
    pos = np.vstack([radii[:, None] * dirs / np.linalg.norm(dirs, axis=1, keepdims=True),
                     np.zeros((1, 3))])
    m = np.r_[np.full(n, bulge.mass / n), hole]
    probe = np.array([0.005, 0.01, 0.02, 0.05, 0.1])
    dirs = rng.standard_normal((64, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    targets = (probe[:, None, None] * dirs[None]).reshape(-1, 3)
    acc, _ = direct_forces(np.vstack([targets, pos]), np.r_[np.zeros(len(targets)), m],
                           eps=eps, targets=np.arange(len(targets)))
    radial = -(acc * targets).sum(axis=1) / np.linalg.norm(targets, axis=1)
    pull = radial.reshape(len(probe), -1).mean(axis=1)
    table = np.interp(probe, r, g)
    assert pull == pytest.approx(table, rel=0.03)
    newton = np.interp(probe, r, mass) / probe ** 2
    assert np.all(newton > 1.08 * table)
    assert phi[0] == pytest.approx(-hole / eps - np.sum(m[:-1] / np.sqrt(radii ** 2 + eps ** 2)),
                                   rel=0.01)


def _cusp_speeds(softening):
    """Mean square speed of the bulge particles within eps = 20 pc of the black hole."""
    config = m31_configs()[0]
    config = type(config)(**{**config.__dict__, "softening": softening})
    state = build_galaxy(config, galaxy_counts([config], 30000)[0], np.random.default_rng(4))
    r = np.linalg.norm(state.pos.astype(float), axis=1)
    cusp = (state.component == Component.BULGE) & (r < 0.02)
    assert cusp.sum() > 10
    return float(np.mean((state.vel[cusp].astype(float) ** 2).sum(axis=1)))


def test_cusp_velocities_are_drawn_in_the_softened_potential():
    """Inside eps the softened pull of the black hole falls to zero at the centre, and so do the
    dispersions that balance it; the Newtonian ones grow as M_bh / 2r (4 times as large here),
    and such particles leave the cusp within an orbit."""
    assert _cusp_speeds(0.0) > 2.0 * _cusp_speeds(0.02)


@pytest.mark.slow
def test_a_short_cpu_run_keeps_the_cusp_and_would_catch_bad_velocities():
    """The bulge's mass within 0.3 and 1 kpc after 2.5 Myr (two crossing times at 0.3 kpc)
    stays within 10% at 12,000 particles; the same galaxy with its velocities zeroed collapses
    and with them doubled flies apart, far beyond that bound (30% or 1.3 times them: 50%)."""
    tool = cusp_tool()
    scene = load_scene("m31-cusp")
    start = scene.build(12000)

    def drift(factor):
        state = type(start)(start.pos.copy(), start.vel * factor, start.mass.copy(),
                            start.component.copy(), start.galaxy.copy())
        engine, _ = create_engine("cpu", scene.params)
        engine.load(state)
        first = tool.cusp_figures(state)
        engine.step(round(2.5 / scene.units.time_myr / scene.params.dt))
        out = tool.changes(first, tool.cusp_figures(engine.state()))["enclosed"]
        engine.close()
        return max(abs(out[1]), abs(out[2]))

    assert drift(1.0) < 0.10
    assert drift(0.0) > 0.3
    assert drift(2.0) > 0.3
