"""The headless renderer (Mesa's EGL here, NVIDIA's on the GPU machine) on the CPU engine."""
import numpy as np
import pytest

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.errors import ParameterError
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState
from galaxyview.render.offscreen import OffscreenRenderer
from galaxyview.render.particles import host_vertices

W, H = 200, 150


@pytest.fixture(scope="module")
def renderer():
    r = OffscreenRenderer(W, H)
    yield r
    r.close()


@pytest.fixture
def engine():
    e = CPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    e.load(plummer_sphere(3000, np.random.default_rng(3)))
    yield e
    e.close()


def lit(img, level=40):
    return (img.max(axis=-1) > level).mean()


def test_draws_the_engine_state_and_follows_its_steps(renderer, engine):
    renderer.attach(engine)
    assert renderer.path == "host upload"
    first = renderer.draw()
    assert first.shape == (H, W, 3) and first.dtype == np.uint8
    assert lit(first) > 0.01
    s = engine.state()
    assert np.array_equal(renderer.read_vertices(), host_vertices(s.pos, s.vel, s.component))
    engine.step(2)
    assert not np.array_equal(renderer.draw(), first)
    assert set(renderer.timings) == {"upload", "render", "read"}


def test_particles_land_where_the_camera_projects_them(renderer):
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [-1, -1, 0.5]], np.float32)
    state = ParticleState(pos, np.zeros_like(pos), np.full(4, 0.25),
                          np.full(4, Component.STAR, np.uint8))
    e = CPUEngine(Params(), gravity="direct")
    e.load(state)
    try:
        renderer.attach(e, fit=False)
        cam = renderer.camera
        cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 6.0, -70.0, 25.0
        renderer.look.point_size = 5.0
        img = renderer.draw()
        px = cam.project(pos, (W, H))
        for x, y in px:
            patch = img[int(y) - 1:int(y) + 2, int(x) - 1:int(x) + 2]
            assert patch.max() > 100, (x, y)
        bright = np.argwhere(img.max(axis=-1) > 60)
        near = np.min(np.linalg.norm(bright[:, None, ::-1] - px[None], axis=-1), axis=1)
        assert near.max() < 4  # light only around the four particles
    finally:
        renderer.look.point_size = 3.0
        renderer.detach()
        e.close()


def test_look_and_camera_change_the_picture(renderer, engine):
    renderer.attach(engine)
    base = renderer.draw()
    renderer.camera.orbit(60.0, 20.0)
    assert not np.array_equal(renderer.draw(), base)
    renderer.camera.orbit(-60.0, -20.0)
    assert np.array_equal(renderer.draw(), base)
    look = renderer.look
    try:
        look.colour_mode = "speed"
        speed = renderer.draw()
        assert not np.array_equal(speed, base)
        look.colour_mode = "component"
        look.exposure = 4.0
        assert renderer.draw().mean() > base.mean()
        look.tone_map = "linear"
        linear = renderer.draw()
        look.tone_map = "exp"
        assert (linear == 255).sum() > (renderer.draw() == 255).sum()  # exp keeps cores
        look.exposure = 1.0
        look.boxes, look.box_levels = True, (1, 3)
        boxes = renderer.draw()
        green = (boxes[..., 1].astype(int) - boxes[..., 0]) > 30
        assert green.mean() > 0.01 and not np.array_equal(boxes, base)
    finally:
        renderer.look = type(look)()


def test_bad_sizes_and_drawing_before_attach():
    with pytest.raises(ParameterError, match="width"):
        OffscreenRenderer(8, 100)
    with pytest.raises(ParameterError, match="height"):
        OffscreenRenderer(100, 1.5)
    r = OffscreenRenderer(32, 32)
    try:
        with pytest.raises(ParameterError, match="attach"):
            r.draw()
    finally:
        r.close()


def test_vertex_buffer_exists_in_gl_before_the_first_draw(renderer):
    """The interop path registers the buffer with CUDA before anything is drawn."""
    from galaxyview.render.headless import made_current
    from galaxyview.render.interop import read_gl_buffer
    from galaxyview.render.particles import VERTEX_DTYPE, ParticleRenderer

    with made_current(renderer._canvas) as canvas:
        fresh = ParticleRenderer()
        fresh.reserve(10)
        v = np.zeros(10, VERTEX_DTYPE)
        v["a_position"] = np.arange(30).reshape(10, 3)
        fresh.vbo.set_data(v)
        handle = fresh.vbo_handle(canvas.context)
        assert handle > 0
        back = np.frombuffer(read_gl_buffer(handle, v.nbytes), VERTEX_DTYPE)
        assert np.array_equal(back, v)


@pytest.mark.parametrize("mode", ["component", "speed", "galaxy", "population"])
def test_host_splat_draws_what_gl_sprites_draw(renderer, engine, mode):
    """The CPU path splats the light on the host (render/host_splat.py); GL sprites are the
    reference (the same tolerance as the CUDA splat's, tests/test_interop_gpu.py)."""
    renderer.attach(engine)
    source, pr = renderer.source, renderer._renderer
    assert source.splatter is not None and pr.light_source is source, source.splat_error
    renderer.look.colour_mode = mode
    try:
        for size in (3.0, 7.0):
            renderer.look.point_size = size
            splat = renderer.draw().astype(int)
            pr.light_source = None  # the GL sprite path
            sprites = renderer.draw().astype(int)
            pr.light_source = source
            diff = np.abs(splat - sprites)
            assert lit(splat) > 0.01
            assert diff.mean() < 1.0 and np.percentile(diff, 99.9) <= 12, (size, diff.max())
        assert source.light(renderer.camera, renderer.look, (4000, 4000)) is None  # sprites
    finally:
        renderer.look.colour_mode, renderer.look.point_size = "component", 3.0
        pr.light_source = source


def test_a_sprite_whose_centre_is_outside_the_view_draws_nothing(renderer):
    """GL drops a point whose centre is outside the view volume, and the splats do; drivers
    that draw wide points partly inside it (NVIDIA's guard band) are made to drop them too,
    so every path draws the same frame at the edges."""
    e = CPUEngine(Params(), gravity="direct")
    cam = renderer.camera
    try:
        cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 6.0, 0.0, 0.0
        axes = cam.project(np.eye(3), (W, H))[:, 0] - W / 2
        u = int(np.argmax(np.abs(axes)))  # the axis that runs across the view
        x_out = np.zeros(3, np.float32)
        x_out[u] = (W + 2.0 - W / 2) / axes[u]  # centred 2 px beyond the right edge
        pos = np.array([x_out, np.zeros(3)], np.float32)
        e.load(ParticleState(pos, np.zeros_like(pos), np.full(2, 0.5),
                             np.full(2, Component.STAR, np.uint8)))
        renderer.attach(e, fit=False)
        cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 6.0, 0.0, 0.0
        assert cam.project(pos, (W, H))[0, 0] == pytest.approx(W + 2.0, abs=0.01)
        renderer.look.point_size = 9.0  # reaches 2.5 px into the view
        source, pr = renderer.source, renderer._renderer
        splat = renderer.draw().astype(int)
        pr.light_source = None  # GL sprites
        sprites = renderer.draw().astype(int)
        pr.light_source = source
        for img in (splat, sprites):
            assert img[H // 2 - 2:H // 2 + 3, W // 2 - 2:W // 2 + 3].max() > 100  # the one inside
            assert img[:, -4:].max() < 5  # nothing at the right edge
    finally:
        renderer.look.point_size = 3.0
        renderer.detach()
        e.close()


class _FakeContext:
    """A pycuda context's push/pop, with no CUDA behind it."""

    def push(self):
        pass

    def pop(self):
        pass


class _SplatsItsLight(CPUEngine):
    """An engine that makes the light itself (as a parallel engine does) and offers it on a
    device that is not there."""

    splats_light = True
    offered = 0

    def light(self, view):
        from galaxyview.light import particle_points, particle_values, splat

        s = self.state()
        values = (np.zeros(s.n, np.float32) if view.code == 0 else
                  particle_values(view.mode, s.pos, s.vel, s.mass, s.galaxy, None))
        return splat(view, particle_points(s.pos, s.component, values))

    def light_on_device(self, view):
        if self.offered is None:
            return None
        self.offered += 1
        return _FakeContext(), 0


def test_light_left_on_a_device_the_window_cannot_share_goes_through_the_host():
    """Engine.light_on_device: where the light texture cannot be registered with CUDA, the
    frame comes from light(view) through the host (the same picture), the notice says so, and
    the device is not asked again."""
    pytest.importorskip("numba")
    frames = []
    for offered in (0, None):  # offered on a device it cannot share; not offered
        e = _SplatsItsLight(Params(theta=0.75, dt=1 / 64, eps=0.05))
        e.load(plummer_sphere(3000, np.random.default_rng(3)))
        e.offered = offered
        with OffscreenRenderer(W, H) as r:
            r.attach(e)
            assert r.path == "light from the engine's processes"
            frames.append(r.draw())
            e.step(1)
            r.source.refresh()
            frames.append(r.draw())
            notice = r.notice
        if offered is not None:
            assert e.offered == 1 and "through the host" in notice
        else:
            assert notice is None
        e.close()
    assert lit(frames[0]) > 0.01 and not np.array_equal(frames[0], frames[1])
    assert np.array_equal(frames[0], frames[2]) and np.array_equal(frames[1], frames[3])
