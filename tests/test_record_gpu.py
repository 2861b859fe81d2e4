"""Recording with the GPU engine through CUDA-GL interop (GPU machine; skipped elsewhere)."""
from __future__ import annotations

import imageio_ffmpeg
import numpy as np
import pytest

from galaxyview.movie.encoder import MovieWriter
from galaxyview.movie.recorder import RecordOptions, record_frames, record_simulation

pytestmark = pytest.mark.gpu

SIZE = (320, 180)


@pytest.fixture(scope="module")
def gpu_sim():
    from galaxyview.simulation import open_simulation

    sim = open_simulation("mw-andromeda", "gpu", 65536)
    yield sim
    sim.close()


class Frames(list):
    def add_frame(self, rgb, copy=True):
        self.append(rgb.copy())


def raw_frames(sim, **options):
    from galaxyview.render.offscreen import OffscreenRenderer

    sim.reset()
    frames = Frames()
    with OffscreenRenderer(*SIZE) as renderer:
        renderer.attach(sim.engine)
        assert renderer.path == "CUDA-GL interop"
        opts = RecordOptions(8, 30, SIZE, **options).validate()
        done, interrupted, failure, _ = record_frames(sim.engine, renderer, frames, opts)
    assert (done, interrupted, failure) == (8, False, None)
    return frames


def test_gpu_movie(gpu_sim, tmp_path):
    sim = gpu_sim
    sim.reset()
    out = tmp_path / "gpu.mp4"
    options = RecordOptions(30, 30, SIZE, steps_per_frame=2, caption=True).validate()
    result = record_simulation(sim, MovieWriter(out, 30, SIZE), options, show_progress=False)
    assert (result.frames, result.interrupted, result.failure) == (30, False, None)
    gen = imageio_ffmpeg.read_frames(str(out))
    assert next(gen)["size"] == SIZE
    frames = [np.frombuffer(b, np.uint8).reshape(SIZE[1], SIZE[0], 3) for b in gen]
    assert len(frames) == 30
    assert all((f.max(axis=2) > 60).mean() > 0.005 for f in frames)
    assert min(np.abs(a.astype(int) - b).sum() for a, b in zip(frames, frames[1:])) > 0


def same_frames(a, b) -> bool:
    """The splat sums light with float atomics in no fixed order, so a pixel may now and then
    round to the neighbouring byte; a step racing the draw would move whole galaxies."""
    diff = np.abs(a.astype(int) - b)
    return diff.max() <= 1 and (diff > 0).mean() < 1e-4


def test_gpu_frames_repeat_and_overlap_changes_nothing(gpu_sim):
    runs = []
    for overlap in (True, True, False):
        frames = raw_frames(gpu_sim, steps_per_frame=3, camera="orbit", overlap=overlap)
        runs.append((frames, gpu_sim.state().pos))
    (first, end), (again, end_again), (serial, end_serial) = runs
    assert np.array_equal(end, end_again) and np.array_equal(end, end_serial)
    assert not same_frames(first[0], first[-1])
    for a, b, c in zip(first, again, serial):
        assert same_frames(a, b) and same_frames(a, c)
