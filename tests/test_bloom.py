"""Bloom (render/bloom.py, shaders/bloom.frag): the bright part of the light moved into a
gaussian glow before tone mapping, headless on Mesa's EGL (CPU engine)."""
import numpy as np
import pytest

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.errors import ParameterError
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState
from galaxyview.render.bloom import THRESHOLD, bloom_image, blocks, sigma_px
from galaxyview.render.look import Look

W, H = 96, 72


def _one_bright_pixel(value=50.0):
    light = np.zeros((H, W, 4), np.float32)
    light[H // 2, W // 2, :3] = (value, 0.5 * value, 0.25 * value)
    light[10, 10, :3] = 0.5  # below the threshold: left alone
    return light


@pytest.mark.parametrize("sigma", [3.0, 8.0])  # in pixels; in blocks of 4 px
def test_reference_moves_the_bright_part_into_a_ring_and_keeps_the_light(sigma):
    light = _one_bright_pixel()
    out = bloom_image(light, 0.5, sigma, THRESHOLD)
    assert np.allclose(out[..., :3].sum(axis=(0, 1)), light[..., :3].sum(axis=(0, 1)),
                       rtol=1e-5)  # nothing reaches the edges from the centre
    y, x = np.mgrid[:H, :W]
    r = np.hypot(x - W // 2, y - H // 2)
    ring = (r >= 2) & (r <= 6)
    assert (out[ring, 0] > 0.01).all() and (light[ring, 0] == 0).all()
    assert out[H // 2, W // 2, 0] < light[H // 2, W // 2, 0]
    assert out[10, 10, 0] == pytest.approx(0.5)
    assert np.array_equal(bloom_image(light, 0.0, 3.0, THRESHOLD), light)


def test_the_glow_keeps_its_share_of_the_picture_at_any_frame_size():
    assert sigma_px(8.0, 1080) == pytest.approx(8.0)
    assert sigma_px(8.0, 2160) == pytest.approx(16.0)
    assert blocks(3.0) == (1, 3.0, 9)
    assert blocks(8.0) == (4, 2.0, 6)  # the blur on blocks of 4 x 4 px
    assert blocks(64.0) == (8, 8.0, 24)
    with pytest.raises(ParameterError, match="bloom"):
        Look(bloom=1.5)
    with pytest.raises(ParameterError, match="bloom_radius"):
        Look(bloom=0.5, bloom_radius=0.0)


@pytest.fixture(scope="module")
def renderer():
    from galaxyview.render.offscreen import OffscreenRenderer

    r = OffscreenRenderer(W, H)
    yield r
    r.close()


@pytest.mark.parametrize("sigma", [2.5, 8.0])
def test_gl_pass_computes_the_reference(renderer, sigma):
    """The GL pass on a float light texture gives bloom_image's light (read back in float)."""
    from vispy import gloo

    from galaxyview.render.headless import made_current

    light = _one_bright_pixel()
    light[5, 3, :3] = (4.0, 8.0, 2.0)  # near an edge: the glow past it is lost, as designed
    with made_current(renderer._canvas):
        texture = gloo.Texture2D(light, format="rgba", internalformat="rgba32f",
                                 interpolation="nearest")
        bloom = renderer._renderer._bloom
        radius = sigma * 1080 / H  # sigma px in this frame
        out = bloom.apply(texture, (W, H), 0.7, radius, 1.0)
        with gloo.FrameBuffer(color=out):
            got = gloo.read_pixels((0, 0, W, H), alpha=True, out_type=np.float32)
        texture.delete()
    got = got[::-1]  # read_pixels gives the top row first; the light's row 0 is the bottom
    want = bloom_image(light, 0.7, sigma, THRESHOLD)
    assert np.allclose(got[..., :3], want[..., :3], rtol=1e-4, atol=1e-5)
    inside = light[..., :3].sum() - (light[5, 3, :3] - THRESHOLD).sum() * 0.7
    assert got[..., :3].sum() == pytest.approx(light[..., :3].sum(), rel=0.05)
    assert got[..., :3].sum() >= inside * (1 - 1e-4)


def _draw_one_star(renderer, **look):
    pos = np.zeros((1, 3), np.float32)
    state = ParticleState(pos, np.zeros_like(pos), np.ones(1), np.full(1, Component.BULGE,
                                                                          np.uint8))
    e = CPUEngine(Params(), gravity="direct")
    e.load(state)
    try:
        renderer.attach(e, fit=False)
        cam = renderer.camera
        cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 5.0, -90.0, 0.0
        renderer.look = Look(point_size=3.0, exposure=40.0, **look)
        return renderer.draw().astype(int)
    finally:
        renderer.detach()
        e.close()


def test_a_bright_star_glows_with_bloom_and_bloom_0_leaves_the_frame_alone(renderer):
    plain = _draw_one_star(renderer)
    assert np.array_equal(_draw_one_star(renderer, bloom=0.0, bloom_radius=20.0), plain)
    glow = _draw_one_star(renderer, bloom=0.8, bloom_radius=2.0 * 1080 / H)  # sigma 2 px
    background = plain[0, 0].max()
    y, x = np.mgrid[:H, :W]
    r = np.hypot(x + 0.5 - W / 2, y + 0.5 - H / 2)
    ring = (r > 2.5) & (r < 5)
    assert (plain[ring].max(axis=-1) <= background).all()  # the sprite ends within 2 px
    assert (glow[ring].max(axis=-1) > background + 10).all()
    assert (glow[r > 10] == plain[r > 10]).all()  # beyond the gaussian's taps: untouched
