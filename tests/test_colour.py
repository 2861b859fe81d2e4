"""Colour by property: the values (render/colour.py), the tree density (model/density.py), the
colour maps (vispy.color) and what the GL sprites draw with them (headless, CPU engine)."""
import numpy as np
import pytest

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.errors import ParameterError
from galaxyview.model.density import tree_density
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState
from galaxyview.render.colour import auto_range, host_values
from galaxyview.render.look import (COLOUR_MAPS, COLOUR_MODES, GALAXY_COLOURS,
                                    POPULATION_COLOURS, Look, colour_lut, mode_code)


def _state(pos, vel, galaxy=None, component=None):
    n = len(pos)
    s = ParticleState(np.asarray(pos, np.float32), np.asarray(vel, np.float32),
                      np.full(n, 1.0 / n), np.full(n, Component.STAR, np.uint8))
    if component is not None:
        s.component[:] = component
    if galaxy is not None:
        s.galaxy[:] = galaxy
    return s


def test_values_of_each_mode():
    s = _state([[0, 0, 0], [1, 0, 0], [0, 2, 0]], [[3, 4, 0], [0, 0, 1], [0, 0, 0]], [0, 2, 1])
    pot = np.array([-2.0, -1.0, -0.5])
    assert np.allclose(host_values("speed", s), [5, 1, 0])
    assert np.allclose(host_values("component", s), [5, 1, 0])  # as render_pack.cu writes
    assert np.allclose(host_values("potential", s, pot), pot)
    assert np.allclose(host_values("energy", s, pot), [12.5 - 2, 0.5 - 1, -0.5])
    assert np.array_equal(host_values("galaxy", s), [0, 2, 1])
    assert host_values("density", s).shape == (3,)
    assert np.allclose(host_values("mass", s), np.log10(s.mass))
    with pytest.raises(ValueError, match="potential"):
        host_values("energy", s)


def test_tree_density_of_a_uniform_cube_and_a_plummer_sphere():
    rng = np.random.default_rng(1)
    n = 40_000
    cube = rng.random((n, 3))
    rho = tree_density(cube, np.full(n, 1.0 / n))
    assert np.median(rho) == pytest.approx(1.0, rel=0.15)  # mass 1 in a unit cube
    s = plummer_sphere(n, np.random.default_rng(2))
    rho = tree_density(s.pos, s.mass)
    r = np.linalg.norm(s.pos - np.median(s.pos, axis=0), axis=1)
    a = 3 * np.pi / 16  # Plummer scale radius for virial radius 1, M = 1
    exact = 3 / (4 * np.pi * a**3) * (1 + (r / a) ** 2) ** -2.5
    for lo, hi in ((0.1, 0.3), (0.3, 0.6), (0.6, 1.2), (1.2, 2.5)):
        shell = (r > lo) & (r < hi)
        ratio = np.median(rho[shell] / exact[shell])
        assert 0.5 < ratio < 2.0, (lo, hi, ratio)
    assert np.median(rho[r < 0.2]) > 30 * np.median(rho[(r > 1.5) & (r < 3)])


def test_auto_range():
    v = np.linspace(-10, 10, 2001)
    assert auto_range("speed", np.abs(v)) == (0.0, pytest.approx(9.9))
    assert auto_range("potential", v) == (pytest.approx(-9.8), pytest.approx(9.8))
    assert auto_range("galaxy", np.array([0, 1, 3])) == (0.0, 3.0)
    lo, hi = auto_range("density", np.full(10, 2.0))  # flat: still an interval
    assert hi > lo == 2.0


def test_colour_maps_come_from_vispy_and_modes_are_coded():
    from vispy.color import get_colormap

    for name in COLOUR_MAPS:
        lut = colour_lut(name)
        assert lut.shape == (256, 3) and lut.dtype == np.float32
        ends = np.asarray(get_colormap(name).map(np.array([[0.0], [1.0]])))[:, :3]
        assert np.allclose(lut[[0, -1]], ends, atol=1e-6)
    assert [mode_code(m) for m in COLOUR_MODES] == [0, 1, 3, 2, 2, 2, 2, 2, 2, 2]
    with pytest.raises(ParameterError, match="colour_map"):
        Look(colour_map="rainbow")
    with pytest.raises(ParameterError, match="value_range"):
        Look(value_range=(1.0, 1.0))


# -- what the GL sprites draw --------------------------------------------------------------------
W, H = 160, 120
BACKGROUND = np.array(Look().background)


def _linear(rgb):
    """Undo the tone map's gamma and background (linear tone map, no clipping)."""
    c = (np.asarray(rgb, float) / 255 - BACKGROUND) / (1 - BACKGROUND)
    return np.clip(c, 0, 1) ** 2.2


@pytest.fixture(scope="module")
def renderer():
    from galaxyview.render.offscreen import OffscreenRenderer

    r = OffscreenRenderer(W, H)
    yield r
    r.close()


def _draw_three(renderer, vel, galaxy=(0, 0, 0), component=None, **look):
    pos = np.array([[-1, 0, 0], [0, 0, 0], [1, 0, 0]], np.float32)
    e = CPUEngine(Params(), gravity="direct")
    e.load(_state(pos, vel, galaxy, component))
    try:
        renderer.attach(e, fit=False)
        cam = renderer.camera
        cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 5.0, -90.0, 0.0
        renderer.look = Look(point_size=5.0, exposure=0.05, tone_map="linear", **look)
        img = renderer.draw()
        px = cam.project(pos, (W, H)).round().astype(int)
        return [_linear(img[y, x]) for x, y in px]
    finally:
        renderer.detach()
        e.close()


def _same_hue(measured, rgb):
    m, c = np.asarray(measured), np.asarray(rgb, float)
    return np.allclose(m / m.max(), c / c.max(), atol=0.04)


@pytest.mark.parametrize("colour_map", ["viridis", "fire", "coolwarm"])
def test_sprites_take_the_colour_map_entry_of_their_value(renderer, colour_map):
    vel = [[0, 0, 0], [0.5, 0, 0], [1.0, 0, 0]]  # speeds 0, 0.5, 1
    got = _draw_three(renderer, vel, colour_mode="speed", colour_map=colour_map,
                      value_range=(0.0, 1.0))
    lut = colour_lut(colour_map)
    for measured, entry in zip(got, (lut[0], lut[128], lut[255])):
        assert _same_hue(measured, entry), (measured, entry)


def test_sprites_take_their_galaxy_colour(renderer):
    got = _draw_three(renderer, np.zeros((3, 3)), galaxy=(0, 1, 9), colour_mode="galaxy")
    for measured, g in zip(got, (0, 1, 9 % 8)):
        assert _same_hue(measured, GALAXY_COLOURS[g]), (measured, g)


POPULATION = (Component.BULGE, Component.DISK, Component.HALO)


def _warmth(rgb):
    return rgb[0] / max(rgb[2], 1e-6)


def test_gl_sprites_colour_by_population(renderer):
    """The old bulge warmer (red over blue) than the young disk; the dark halo faint, as in the
    component colours."""
    bulge, disk, halo = _draw_three(renderer, np.zeros((3, 3)), component=POPULATION,
                                    colour_mode="population")
    assert _warmth(bulge) > 2.0 > 1.0 > _warmth(disk), (bulge, disk)
    for measured, c in ((bulge, Component.BULGE), (disk, Component.DISK)):
        assert _same_hue(measured, POPULATION_COLOURS[c]), (measured, c)
    assert halo.sum() < 0.15 * disk.sum()
    by_component = _draw_three(renderer, np.zeros((3, 3)), component=POPULATION,
                               colour_mode="component")
    assert _warmth(by_component[0]) < _warmth(bulge)  # a colour of its own, not the component's


def test_host_splat_colours_by_population():
    """The host splat (light/kernel.py) takes the same population colours as the sprites."""
    from galaxyview.light import splat
    from galaxyview.light.kernel import particle_points
    from galaxyview.render.camera import Camera
    from galaxyview.render.host_splat import light_view

    cam = Camera()
    cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 5.0, -90.0, 0.0
    cam.update()
    pos = np.array([[-1, 0, 0], [0, 0, 0], [1, 0, 0]], np.float32)
    look = Look(point_size=5.0, colour_mode="population")
    view = light_view(cam, look, (W, H), ("population", 3, (0.0, 1.0), colour_lut("viridis")),
                      3)
    light = splat(view, particle_points(pos, np.array(POPULATION, np.float32), np.zeros(3)))
    px = cam.project(pos, (W, H))
    bulge, disk, halo = (light[H - 1 - int(y), int(x), :3] for x, y in px)  # row 0: bottom
    assert _warmth(bulge) > 2.0 > 1.0 > _warmth(disk), (bulge, disk)
    for measured, c in ((bulge, Component.BULGE), (disk, Component.DISK)):
        assert _same_hue(measured, POPULATION_COLOURS[c]), (measured, c)
    assert 0 < halo.sum() < 0.15 * disk.sum()


def test_each_mode_draws_a_different_picture(renderer):
    e = CPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    state = plummer_sphere(3000, np.random.default_rng(3))
    state.galaxy[1500:] = 1
    state.mass[:1000] *= 5  # an IMF of two kinds of star, for the mass mode
    e.load(state)
    try:
        renderer.attach(e)
        pictures = {}
        for mode in COLOUR_MODES:
            renderer.look = Look(colour_mode=mode)
            pictures[mode] = renderer.draw()
            assert (pictures[mode].max(axis=-1) > 40).mean() > 0.01, mode
            if mode != "component":
                assert mode in renderer._renderer.ranges
        for a in COLOUR_MODES:
            for b in COLOUR_MODES:
                if a < b:
                    assert not np.array_equal(pictures[a], pictures[b]), (a, b)
    finally:
        renderer.detach()
        e.close()


@pytest.mark.slow
def test_a_colour_range_from_a_sample_of_a_large_state():
    """engine_values with a count: a strided sample of the state (Engine.sample_state) for
    the modes of one particle's own values, whose map ends are the whole state's; the
    potential and the density (neighbours) from the whole state."""
    from galaxyview.render.colour import engine_values

    engine = CPUEngine(Params(theta=0.7, dt=1 / 64, eps=0.05))
    engine.load(plummer_sphere(40000, np.random.default_rng(4)))
    for mode in ("speed", "vz", "mass"):
        part, whole = engine_values(engine, mode, count=4000), engine_values(engine, mode)
        assert 4000 <= len(part) <= 8000 and len(whole) == 40000
        lo, hi = auto_range(mode, whole)
        assert np.allclose(auto_range(mode, part), (lo, hi), atol=0.05 * (hi - lo) + 1e-9)
    for mode in ("potential", "density"):
        assert len(engine_values(engine, mode, count=4000)) == 40000


def test_the_cuda_splat_reads_the_population_colours_where_they_are_put():
    """light/device.py puts the population table at P_POPULATION; kernels/render_splat.cu
    reads it at P_EYES + MAX_EYES * EYE_FLOATS (the GPU test compares the frames)."""
    import re

    from galaxyview.light import device
    from galaxyview.light.kernel import EYE_FLOATS
    from galaxyview.render.camera import Camera
    from galaxyview.render.host_splat import light_view
    from galaxyview.resources import kernels_dir

    source = (kernels_dir() / "render_splat.cu").read_text()
    defines = dict(re.findall(r"#define (\w+) (.+)", source))
    assert int(defines["MAX_EYES"]) == device.MAX_EYES
    assert int(defines["EYE_FLOATS"]) == EYE_FLOATS
    assert defines["P_EYES"] == "(P_PROJ + 2)"
    assert defines["P_POPULATION"] == "(P_EYES + MAX_EYES * EYE_FLOATS)"
    assert device.P_POPULATION == device.P_PROJ + 2 + device.MAX_EYES * EYE_FLOATS
    view = light_view(Camera(), Look(colour_mode="population"), (64, 48),
                      ("population", 3, (0.0, 1.0), colour_lut("viridis")), 10)
    p = device.splat_params(view)
    assert p[50] == 3
    rows = p[device.P_POPULATION:device.P_FLOATS].reshape(8, 3)
    for c, rgb in POPULATION_COLOURS.items():
        assert np.allclose(rows[c], rgb)
