"""Light per particle (render/particles.py light_gain): a dense view looks the same at any image
size, sparse particles keep their brightness, and 1920x1080 frames are as they were."""
import numpy as np
import pytest

from galaxyview.render.particles import REFERENCE_N, light_gain


def test_full_hd_frames_keep_their_gain():
    for n in (1_000, 100_000, 1_000_000, 16_000_000):
        assert light_gain(n, (1920, 1080)) == pytest.approx(
            float(np.clip(0.35 * (REFERENCE_N / n) ** 0.5, 0.01, 3.0)))


def test_dense_views_follow_the_pixel_count_sparse_ones_keep_their_light():
    dense = light_gain(1_000_000, (960, 540)) / light_gain(1_000_000, (1920, 1080))
    assert dense == pytest.approx(0.25, rel=0.05)  # a quarter of the pixels, a quarter the gain
    # at 8K a million 3-pixel sprites barely overlap: the gain grows, less than the pixels do
    assert 2 < light_gain(1_000_000, (7680, 4320)) / light_gain(1_000_000) < 16
    sparse = light_gain(500, (640, 480)) / light_gain(500, (1920, 1080))
    assert sparse > 0.9


def _centre_brightness(size, n=200_000):
    from galaxyview.engines import create_engine
    from galaxyview.model.ics.plummer import plummer_sphere
    from galaxyview.model.params import Params
    from galaxyview.render.offscreen import OffscreenRenderer

    engine, _ = create_engine("reference", Params(theta=0.75, dt=1 / 64, eps=0.05))
    engine.load(plummer_sphere(n, np.random.default_rng(7)))
    with OffscreenRenderer(*size) as r:
        r.attach(engine)
        a = r.draw().astype(float)
    h, w = a.shape[:2]
    return a[h // 2 - h // 10:h // 2 + h // 10, w // 2 - w // 10:w // 2 + w // 10].mean()


def test_a_half_size_frame_of_a_dense_sphere_looks_like_the_full_size_one():
    """Without the pixel factor the 960x540 frame's centre was 43% brighter (217 against 152
    of 255) and burnt out at 1M particles in the window."""
    full, half = _centre_brightness((1920, 1080)), _centre_brightness((960, 540))
    assert half == pytest.approx(full, rel=0.12), (half, full)
