"""MovieWriter on synthetic frames: H.264 output read back with imageio-ffmpeg, safe output."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import imageio_ffmpeg
import numpy as np
import pytest

from galaxyview.errors import GalaxyviewError
from galaxyview.movie.encoder import MovieError, MovieWriter, check_output

W, H = 160, 96


def synthetic(i: int, width: int = W, height: int = H) -> np.ndarray:
    """A horizontal red ramp with a green square that moves down one pixel per frame."""
    rgb = np.zeros((height, width, 3), np.uint8)
    rgb[:, :, 0] = np.linspace(0, 255, width, dtype=np.uint8)[None, :]
    rgb[10 + i:40 + i, 50:80] = (40, 200, 90)
    return rgb


def read_movie(path):
    gen = imageio_ffmpeg.read_frames(str(path))
    meta = next(gen)
    width, height = meta["size"]
    frames = [np.frombuffer(b, np.uint8).reshape(height, width, 3) for b in gen]
    return meta, frames


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


def test_frames_round_trip(tmp_path):
    out = tmp_path / "synthetic.mp4"
    sent = [synthetic(i) for i in range(30)]
    with MovieWriter(out, fps=30, size=(W, H)) as writer:
        for rgb in sent:
            writer.add_frame(rgb)
    meta, frames = read_movie(out)
    assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p")
    assert meta["size"] == (W, H) and meta["fps"] == 30
    assert len(frames) == 30
    for got, want in zip(frames, sent):
        assert np.abs(got.astype(int) - want).mean() < 3  # crf 18: close to the input
    assert np.abs(frames[0].astype(int) - frames[29]).mean() > 5  # the square moved
    assert leftovers(tmp_path) == []


def test_rgba_frames_and_buffer_reuse(tmp_path):
    """Alpha is dropped; the writer copies, so the caller may overwrite its buffer at once."""
    out = tmp_path / "rgba.mp4"
    buffer = np.zeros((H, W, 4), np.uint8)
    with MovieWriter(out, fps=10, size=(W, H)) as writer:
        for value in (30, 220):
            buffer[...] = value
            writer.add_frame(buffer)
    _, frames = read_movie(out)
    assert [round(float(f.mean())) for f in frames] == [30, 220]


def test_temporary_file_until_close(tmp_path):
    out = tmp_path / "late.mp4"
    writer = MovieWriter(out, fps=30, size=(W, H))
    writer.add_frame(synthetic(0))
    assert not out.exists()
    assert writer.temp_path.parent == tmp_path and leftovers(tmp_path) == [writer.temp_path.name]
    assert writer.close() == out
    assert out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("size", [(161, 96), (160, 95)])
def test_odd_size_rejected(tmp_path, size):
    with pytest.raises(MovieError, match="even width and height"):
        MovieWriter(tmp_path / "odd.mp4", fps=30, size=size)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fps", [0, 2.5, 1000])
def test_bad_fps_rejected(tmp_path, fps):
    with pytest.raises(MovieError, match="frame rate"):
        MovieWriter(tmp_path / "fps.mp4", fps=fps, size=(W, H))


def test_wrong_frame_size_rejected(tmp_path):
    with MovieWriter(tmp_path / "a.mp4", fps=30, size=(W, H)) as writer:
        writer.add_frame(synthetic(0))
        with pytest.raises(MovieError, match="does not match the movie size 160x96"):
            writer.add_frame(synthetic(0, W + 2, H))
        with pytest.raises(MovieError, match="uint8"):
            writer.add_frame(synthetic(0).astype(np.float32))
    assert len(read_movie(tmp_path / "a.mp4")[1]) == 1


def test_existing_file_refused_without_overwrite(tmp_path):
    out = tmp_path / "keep.mp4"
    out.write_bytes(b"precious")
    with pytest.raises(MovieError, match="already exists.*--overwrite"):
        MovieWriter(out, fps=30, size=(W, H))
    assert out.read_bytes() == b"precious" and leftovers(tmp_path) == []
    with MovieWriter(out, fps=30, size=(W, H), overwrite=True) as writer:
        writer.add_frame(synthetic(3))
    assert len(read_movie(out)[1]) == 1


def test_error_while_recording_keeps_old_file(tmp_path):
    """An exception inside the with-block discards the new movie and leaves the old one."""
    out = tmp_path / "old.mp4"
    out.write_bytes(b"old movie")
    with pytest.raises(RuntimeError):
        with MovieWriter(out, fps=30, size=(W, H), overwrite=True) as writer:
            writer.add_frame(synthetic(0))
            raise RuntimeError("renderer broke")
    assert out.read_bytes() == b"old movie" and leftovers(tmp_path) == []


def test_no_frames_no_movie(tmp_path):
    writer = MovieWriter(tmp_path / "empty.mp4", fps=30, size=(W, H))
    with pytest.raises(MovieError, match="no frames"):
        writer.close()
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder this user cannot create files in (root ignores modes: use sysfs then)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        probe = folder / "probe"
        probe.touch()
        probe.unlink()
    except PermissionError:
        yield folder
    else:
        yield Path("/sys")
    folder.chmod(0o700)


def test_unwritable_paths_fail_at_once(tmp_path, unwritable_folder):
    cases = {
        tmp_path / "missing" / "m.mp4": "does not exist",
        tmp_path: "is a folder",
        unwritable_folder / "m.mp4": "no permission",
        tmp_path / "movie.avi": "ending in .mp4",
    }
    for path, why in cases.items():
        with pytest.raises(MovieError, match=why) as info:
            MovieWriter(path, fps=30, size=(W, H))
        assert isinstance(info.value, GalaxyviewError) and str(path) in str(info.value)
        with pytest.raises(MovieError, match=why):
            check_output(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locked"]


def test_encoder_death_is_reported(tmp_path):
    """If ffmpeg dies (disk full, killed), add_frame says so and nothing is left behind."""
    out = tmp_path / "dead.mp4"
    writer = MovieWriter(out, fps=30, size=(W, H))
    writer.add_frame(synthetic(0))
    os.kill(writer._proc.pid, signal.SIGKILL)
    with pytest.raises(MovieError, match="encoder \\(ffmpeg\\) failed.*No movie was written"):
        for i in range(200):  # the pipe buffers a few frames before the failure shows
            writer.add_frame(synthetic(i % 50))
        writer.close()
    assert not out.exists() and leftovers(tmp_path) == []


def test_caption_gives_myr_seconds_or_n_body_time():
    from galaxyview.model.params import Params
    from galaxyview.model.scene import load_scene
    from galaxyview.model.units import in_seconds
    from galaxyview.movie.caption import caption_text

    ring = load_scene("saturn-a-ring").params
    assert in_seconds(ring.G) and not in_seconds(Params().G)
    assert caption_text("saturn-a-ring", 12345.6, None, in_seconds(ring.G)).endswith("12,346 s")
    assert caption_text("plummer", 1.5, None).endswith("t = 1.500 (N-body units)")
    assert caption_text("antennae", 2.0, 4.71).endswith("t = 9.4 Myr")
