"""Frames for the encoder made on the GPU (Mesa's EGL here): the GL pass that turns a finished
frame and its caption into I420 against the numpy conversion, and movies fed I420."""
import imageio_ffmpeg
import numpy as np
import pytest

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.movie.caption import caption_overlay, draw_caption
from galaxyview.movie.encoder import MovieError, MovieWriter
from galaxyview.render.offscreen import OffscreenRenderer
from galaxyview.render.yuv import i420_from_rgb, i420_size, rgb_from_i420


def test_the_numpy_conversion_gives_bt709_limited_range():
    rgb = np.zeros((2, 8, 3), np.uint8)
    rgb[:, 0:2] = 255  # white
    rgb[:, 4:6] = (255, 0, 0)  # red
    rgb[:, 6:8] = (0, 0, 255)  # blue
    out = i420_from_rgb(rgb)
    y, u, v = out[:16].reshape(2, 8), out[16:20], out[20:24]
    assert list(y[0, ::2]) == [235, 16, 63, 32]  # BT.709: white, black, red, blue
    assert list(u) == [128, 128, 102, 240]
    assert list(v) == [128, 128, 240, 118]


def test_the_numpy_conversion_round_trips():
    rng = np.random.default_rng(4)
    smooth = np.repeat(np.repeat(rng.integers(20, 235, (30, 40, 3)), 2, 0), 2, 1).astype(np.uint8)
    back = rgb_from_i420(i420_from_rgb(smooth), 80, 60)
    assert np.abs(back.astype(int) - smooth).max() <= 2


@pytest.fixture(scope="module")
def engine():
    e = CPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    e.load(plummer_sphere(3000, np.random.default_rng(3)))
    yield e
    e.close()


@pytest.mark.parametrize("size", [(200, 150), (64, 48)])  # 75 chroma rows: a row holds U and V
def test_the_gpu_pass_equals_the_numpy_conversion(engine, size):
    with OffscreenRenderer(*size) as r:
        r.attach(engine)
        r.look.exposure = 3.0
        rgb = r.draw()
        frame = r.read_i420()
    assert frame.shape == (i420_size(*size),) and frame.dtype == np.uint8
    assert (rgb.max(axis=-1) > 60).mean() > 0.01  # particles in the frame, not only black
    diff = np.abs(frame.astype(int) - i420_from_rgb(rgb))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.05  # rounding of the last bit only


def test_the_caption_is_composed_as_on_the_host(engine):
    with OffscreenRenderer(320, 180) as r:
        r.attach(engine)
        rgb = r.draw()
        text = "plummer   t = 12.5 Myr"
        plain = r.read_i420()
        captioned = r.read_i420(caption_overlay(text, 320, 180))
    host = i420_from_rgb(draw_caption(rgb.copy(), text))
    diff = np.abs(captioned.astype(int) - host)
    assert diff.max() <= 2 and (diff > 1).mean() < 0.001
    luma = (captioned[:320 * 180] != plain[:320 * 180]).reshape(180, 320)
    rows, cols = np.nonzero(luma)
    assert len(rows) > 200 and rows.min() > 180 // 2 and cols.max() < 320 // 2  # bottom left


def _frames(path):
    gen = imageio_ffmpeg.read_frames(str(path))
    meta = next(gen)
    w, h = meta["size"]
    return [np.frombuffer(f, np.uint8).reshape(h, w, 3) for f in gen]


def test_a_movie_fed_i420_matches_one_fed_rgb(tmp_path):
    yy, xx = np.mgrid[0:48, 0:64]
    frames = [np.stack([xx * 4, yy * 5, (xx + yy + 20 * i) % 256], -1).astype(np.uint8)
              for i in range(3)]  # smooth: chroma subsampling loses little
    with MovieWriter(tmp_path / "rgb.mp4", 10, (64, 48), crf=0) as w:
        for f in frames:
            w.add_frame(f)
    with MovieWriter(tmp_path / "yuv.mp4", 10, (64, 48), crf=0, pixel_format="yuv420p") as w:
        for f in frames:
            w.add_frame(i420_from_rgb(f))
    a, b = _frames(tmp_path / "rgb.mp4"), _frames(tmp_path / "yuv.mp4")
    assert len(a) == len(b) == 3
    for x, y, f in zip(a, b, frames):
        assert np.abs(y.astype(int) - f).mean() < 3  # the I420 movie shows the frames
        assert np.abs(y.astype(int) - x).mean() < 2  # as the RGB one does


def test_a_wrong_i420_frame_is_refused(tmp_path):
    with pytest.raises(MovieError, match="yuv420p frame of 64x48 must be 4608"):
        with MovieWriter(tmp_path / "m.mp4", 10, (64, 48), pixel_format="yuv420p") as w:
            w.add_frame(np.zeros((48, 64, 3), np.uint8))
    assert not list(tmp_path.iterdir())
    with pytest.raises(MovieError, match="pixel format"):
        MovieWriter(tmp_path / "m.mp4", 10, (64, 48), pixel_format="nv12")
