"""The disk galaxy model: mass profiles, equilibrium velocities, particle split, scene keys."""
import math

import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.errors import ParameterError, SceneError
from galaxyview.model.ics import galaxy
from galaxyview.model.ics.jeans import _truncated_maxwell_speeds
from galaxyview.model.ics.profiles import ExponentialDisk, Spherical, bessel_j1
from galaxyview.model.state import Component
from galaxyview.model.units import UnitSystem
from galaxyview.model.validate import Table

MILKY_WAY = {
    "disk": {"mass": 4.0, "scale_length": 3.5, "scale_height": 0.35, "toomre_q": 1.5},
    "bulge": {"mass": 1.0, "scale": 0.7},
    "halo": {"mass": 85.0, "scale": 22.0, "truncation": 220.0},
    "black_hole": {"mass": 0.0004},
    "particles": {"disk": 17.0, "bulge": 17.0},
}


def parse(data, units=UnitSystem()):
    return galaxy.parse(Table(data, "test.toml", "model"), units)


def build(data, n, seed=1):
    return galaxy.build(parse(data), n, np.random.default_rng(seed))


# -- profiles ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["hernquist", "nfw"])
def test_sampled_radii_follow_the_enclosed_mass(kind):
    sphere = Spherical(kind, 2.0, 3.0, 40.0)
    r = sphere.sample_radii(200_000, np.random.default_rng(0))
    assert r.max() <= 40.0
    for radius in (1.0, 3.0, 10.0, 25.0):
        assert np.mean(r < radius) == pytest.approx(sphere.enclosed_mass(radius) / 2.0, abs=4e-3)
    # density is the derivative of the enclosed mass
    x = np.array([0.5, 2.0, 8.0])
    dm = (sphere.enclosed_mass(x * 1.001) - sphere.enclosed_mass(x * 0.999)) / (0.002 * x)
    assert dm == pytest.approx(4 * np.pi * x ** 2 * sphere.density(x), rel=1e-5)


def test_bessel_j1_matches_its_integral_representation():
    x = np.array([0.1, 1.0, 3.8317, 7.9, 8.1, 20.0, 75.0])
    tau = np.linspace(0, np.pi, 20001)
    exact = np.trapezoid(np.cos(tau[None, :] - x[:, None] * np.sin(tau[None, :])), tau,
                         axis=1) / np.pi
    assert bessel_j1(x) == pytest.approx(exact, abs=2e-7)


def _freeman_vc2(y):
    """Thin exponential disk, M = h = 1: v^2 = 2 y^2 (I0 K0 - I1 K1)(y), y = R / 2h, with the
    modified Bessel functions from their integral representations."""
    t = np.linspace(0, 25, 50001)
    k = [np.trapezoid(np.exp(-y * np.cosh(t)) * np.cosh(nu * t), t) for nu in (0, 1)]
    a = np.linspace(0, np.pi, 50001)
    i = [np.trapezoid(np.exp(y * np.cos(a)) * np.cos(nu * a), a) / np.pi for nu in (0, 1)]
    return 2 * y * y * (i[0] * k[0] - i[1] * k[1])


@pytest.mark.parametrize("R", [0.3, 1.0, 2.2, 5.0, 12.0])
def test_thin_disk_force_matches_freeman(R):
    disk = ExponentialDisk(1.0, 1.0, 0.0)
    assert -R * disk.midplane_radial_force(R) == pytest.approx(_freeman_vc2(R / 2), rel=2e-3)


def test_thickness_weakens_the_midplane_force_near_the_centre_only():
    thin, thick = ExponentialDisk(1.0, 1.0, 0.0), ExponentialDisk(1.0, 1.0, 0.2)
    ratio = thick.midplane_radial_force([1.0, 3.0, 20.0]) / thin.midplane_radial_force(
        [1.0, 3.0, 20.0])
    assert 0.75 < ratio[0] < 0.95 and ratio[0] < ratio[1] < ratio[2] < 1.0
    assert ratio[2] > 0.999


def test_truncated_maxwellian_keeps_the_mean_square_speed():
    rng = np.random.default_rng(0)
    n = 200_000
    for v_max in (50.0, 3.0, 2.3):
        v = _truncated_maxwell_speeds(np.ones(n), np.full(n, v_max), rng)
        assert v.max() < v_max
        assert np.mean(v * v) == pytest.approx(3.0, rel=0.01)
    v = _truncated_maxwell_speeds(np.ones(n), np.full(n, 2.0), rng)  # 3 sigma^2 > 3/5 v_max^2
    assert v.max() < 2.0 and np.mean(v * v) == pytest.approx(0.6 * 4.0, rel=0.01)


# -- the built galaxy --------------------------------------------------------------------------
def virial_ratio(state) -> float:
    pos, vel, m = (state.pos.astype(float), state.vel.astype(float), state.mass.astype(float))
    _, pot = direct_forces(pos, m, eps=0.0)
    kinetic = 0.5 * m @ (vel * vel).sum(axis=1)
    return 2 * kinetic / abs(0.5 * m @ pot)


def test_milky_way_is_in_virial_equilibrium():
    assert virial_ratio(build(MILKY_WAY, 6000)) == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("profile", ["hernquist", "nfw"])
def test_spheres_alone_are_in_virial_equilibrium(profile):
    data = {"halo": {"profile": profile, "mass": 10.0, "scale": 5.0, "truncation": 60.0},
            "black_hole": {"mass": 0.5}}
    assert virial_ratio(build(data, 5000)) == pytest.approx(1.0, abs=0.03)


def test_rotation_curve_matches_the_model_circular_velocity():
    """Circular speed sqrt(R |a_R|) of the particles' own gravity, averaged round rings in the
    disk plane, against the model's v_c between 1 and 4 disk scale lengths."""
    config = parse(MILKY_WAY)
    state = galaxy.build(config, 60_000, np.random.default_rng(3))
    h = config.disk.scale_length
    radii = np.array([1.0, 1.5, 2.0, 3.0, 4.0]) * h
    phi = np.linspace(0, 2 * np.pi, 48, endpoint=False)
    ring = np.array([[R * np.cos(p), R * np.sin(p), 0.0] for R in radii for p in phi])
    pos = np.concatenate([state.pos.astype(float), ring])
    mass = np.concatenate([state.mass.astype(float), np.zeros(len(ring))])
    acc, _ = direct_forces(pos, mass, eps=0.05, targets=np.arange(state.n, len(pos)))
    a_r = -np.einsum("ij,ij->i", acc[:, :2], ring[:, :2]) / np.hypot(ring[:, 0], ring[:, 1])
    measured = np.sqrt(a_r * np.hypot(ring[:, 0], ring[:, 1])).reshape(len(radii), -1).mean(1)
    model = config.equilibrium().circular_velocity(radii)
    assert measured == pytest.approx(model, rel=0.05)
    # the disk's own streaming speed: v_c less the asymmetric drift, within 5% of v_c here
    disk = state.component == Component.DISK
    p, v = state.pos[disk].astype(float), state.vel[disk].astype(float)
    R = np.hypot(p[:, 0], p[:, 1])
    v_phi = (p[:, 0] * v[:, 1] - p[:, 1] * v[:, 0]) / R
    streaming = np.array([v_phi[abs(R - r) < 0.25 * h].mean() for r in radii])
    assert streaming == pytest.approx(model, rel=0.05)
    assert np.all(streaming < model * 1.01)


def test_disk_velocity_dispersions_follow_toomre_q():
    config = parse(MILKY_WAY)
    state = galaxy.build(config, 60_000, np.random.default_rng(4))
    eq = config.equilibrium()
    disk = state.component == Component.DISK
    p, v = state.pos[disk].astype(float), state.vel[disk].astype(float)
    R = np.hypot(p[:, 0], p[:, 1])
    v_r = (p[:, 0] * v[:, 0] + p[:, 1] * v[:, 1]) / R
    h = config.disk.scale_length
    for r in (1.5 * h, 2.5 * h):
        ring = abs(R - r) < 0.2 * h
        sigma_r = np.interp(r, eq.R, eq.sigma_r)
        assert v_r[ring].std() == pytest.approx(sigma_r, rel=0.06)
        kappa = math.sqrt(np.interp(r, eq.R, np.gradient(eq.R ** 2 * eq.vc2, np.log(eq.R)))
                          / r ** 4)
        toomre = sigma_r * kappa / (3.36 * config.disk.surface_density(r))
        assert toomre == pytest.approx(1.5, rel=1e-3)
    # sech^2 layer about the disk's mid-plane: median |z| = z0 artanh(1/2)
    z = p[:, 2] - np.median(p[:, 2])
    assert np.median(abs(z)) == pytest.approx(0.35 * math.atanh(0.5), rel=0.03)


def test_components_are_tagged_and_counted():
    state = build(MILKY_WAY, 10_000)
    counts = np.bincount(state.component, minlength=6)
    assert state.n == 10_000
    assert counts[Component.BLACK_HOLE] == 1
    # 17 times more particles per unit mass in disk and bulge than in the halo
    per_mass = [counts[c] / m for c, m in ((Component.DISK, 4.0), (Component.BULGE, 1.0),
                                           (Component.HALO, 85.0))]
    assert per_mass[0] == pytest.approx(17 * per_mass[2], rel=0.01)
    assert per_mass[1] == pytest.approx(17 * per_mass[2], rel=0.01)
    assert state.mass.sum() == pytest.approx(90.0004, rel=1e-5)
    assert np.all(state.galaxy == 0)
    bh = state.component == Component.BLACK_HOLE
    assert state.mass[bh][0] == pytest.approx(0.0004)
    assert np.linalg.norm(state.pos[bh]) < 0.05
    # the galaxy is centred and at rest, spinning about +z
    m = state.mass.astype(float)
    assert np.abs(m @ state.pos / m.sum()).max() < 1e-4
    assert np.abs(m @ state.vel / m.sum()).max() < 1e-4
    disk = state.component == Component.DISK
    spin = np.cross(state.pos[disk], state.vel[disk]).sum(axis=0)
    assert spin[2] > 0 and np.hypot(spin[0], spin[1]) < 0.02 * spin[2]


def test_equal_mass_particles_by_default_and_n_rescales_keeping_masses():
    data = {k: v for k, v in MILKY_WAY.items() if k != "particles"}
    for n in (5000, 20_000):
        state = build(data, n)
        light = state.component != Component.BLACK_HOLE
        assert np.ptp(state.mass[light]) < 0.02 * state.mass[light].max()  # integer counts
        for comp, mass in ((Component.DISK, 4.0), (Component.HALO, 85.0)):
            assert state.mass[state.component == comp].sum() == pytest.approx(mass, rel=1e-5)


def test_same_seed_same_particles():
    a, b = build(MILKY_WAY, 3000, seed=7), build(MILKY_WAY, 3000, seed=7)
    for key in ("pos", "vel", "mass", "component", "galaxy"):
        assert np.array_equal(getattr(a, key), getattr(b, key))
    assert not np.array_equal(a.pos, build(MILKY_WAY, 3000, seed=8).pos)


def test_units_convert_physical_keys():
    units = UnitSystem(length_kpc=2.0, mass_msun=1e11)
    config = parse(MILKY_WAY, units)
    assert config.disk.scale_length == pytest.approx(1.75)
    assert config.disk.mass == pytest.approx(0.4)
    assert config.halo.truncation == pytest.approx(110.0)


def test_too_few_particles_is_a_clear_error():
    with pytest.raises(ParameterError, match="too few"):
        build(MILKY_WAY, 2)


@pytest.mark.parametrize("change, message", [
    ({"disk": {"mass": -1.0, "scale_length": 3.0}}, r"model\.disk\.mass = -1\.0"),
    ({"disk": {"mass": 1.0, "scale_length": 3.0, "scale_height": 2.0}}, "half the scale length"),
    ({"disk": {"mass": 1.0, "scale_length": 3.0, "toomre_q": 0.1}}, r"toomre_q"),
    ({"halo": {"mass": 1.0, "scale": 10.0, "truncation": 5.0}}, "larger than the scale"),
    ({"halo": {"profile": "isothermal", "mass": 1.0, "scale": 10.0}}, "'hernquist', 'nfw'"),
    ({"bulge": {"mass": 1.0}}, r"model\.bulge\.scale is missing"),
    ({"disk": {"mass": 1.0, "scale_length": 3.0, "toomre": 1.2}},
     r"unknown key\(s\) model\.disk\.toomre"),
    ({"particles": {"disk": 0.0}}, r"model\.particles\.disk"),
    ({"galaxy": 1}, r"unknown key\(s\) model\.galaxy"),
])
def test_bad_keys_name_file_key_and_allowed_values(change, message):
    data = {**MILKY_WAY, **change}
    with pytest.raises(SceneError, match=message) as info:
        parse(data)
    assert "test.toml" in str(info.value)


def test_a_black_hole_alone_is_not_a_galaxy():
    with pytest.raises(SceneError, match="at least one of"):
        parse({"black_hole": {"mass": 1.0}})
