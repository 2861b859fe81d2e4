"""Headless recording with the CPU engine on offscreen Mesa: frames, determinism, safe output."""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time

import imageio_ffmpeg
import numpy as np
import pytest

from galaxyview.cli import record
from galaxyview.movie.encoder import MovieWriter
from galaxyview.movie.recorder import RecordOptions, follow_target, record_frames
from galaxyview.simulation import open_simulation

SIZE = ["--size", "160x96"]
SCENE = ["cold-collapse", "--backend", "cpu", "--n", "1500"]  # visibly moves from step to step


def parse(argv):
    parser = argparse.ArgumentParser(prog="galaxyview")
    record.add_record_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["record", *argv])


def run_cli(argv) -> int:
    return record.run_record(parse([*argv, "--no-progress"]))


def read_movie(path):
    gen = imageio_ffmpeg.read_frames(str(path))
    meta = next(gen)
    width, height = meta["size"]
    return meta, [np.frombuffer(b, np.uint8).reshape(height, width, 3) for b in gen]


def test_cli_movie_of_30_frames(tmp_path, capsys):
    out = tmp_path / "collapse.mp4"
    code = run_cli([*SCENE, "-o", str(out), "--frames", "30", *SIZE, "--steps-per-frame", "4",
                    "--camera", "orbit", "--caption"])
    assert code == 0, capsys.readouterr().err
    meta, frames = read_movie(out)
    assert meta["size"] == (160, 96) and meta["fps"] == 30 and len(frames) == 30
    for rgb in frames:
        assert (rgb.max(axis=2) > 60).mean() > 0.01  # not black: particles and caption lit
    diffs = [np.abs(a.astype(int) - b).sum() for a, b in zip(frames, frames[1:])]
    assert min(diffs) > 0  # every frame differs from the one before
    assert np.abs(frames[0].astype(int) - frames[-1]).mean() > 1
    assert "30 frames" in capsys.readouterr().out
    assert [p.name for p in tmp_path.iterdir()] == ["collapse.mp4"]


def record_raw(n_frames: int, **options):
    """Frames as rendered (before encoding) for the test scene."""
    from galaxyview.render.offscreen import OffscreenRenderer

    class Frames(list):
        def add_frame(self, rgb, copy=True):
            self.append(rgb.copy())

    sim = open_simulation("cold-collapse", "cpu", 1500)
    renderer = OffscreenRenderer(160, 96)
    try:
        renderer.attach(sim.engine)
        if options.get("camera") == "follow":
            renderer.camera.follow(follow_target(sim))
        frames = Frames()
        opts = RecordOptions(n_frames, 30, (160, 96), **options).validate()
        done, interrupted, failure, _ = record_frames(sim.engine, renderer, frames, opts)
        assert (done, interrupted, failure) == (n_frames, False, None)
        core = follow_target(sim)()  # where the first galaxy's core is now
        return frames, renderer.camera.centre.copy(), core, sim.engine.time
    finally:
        renderer.close()
        sim.close()


def test_same_inputs_same_frames():
    """Same scene, seed, parameters and engine: the same frames, stepping overlapped or not."""
    first = record_raw(6, steps_per_frame=3, camera="orbit")[0]
    again = record_raw(6, steps_per_frame=3, camera="orbit")[0]
    serial = record_raw(6, steps_per_frame=3, camera="orbit", overlap=False)[0]
    assert all(np.array_equal(a, b) and np.array_equal(a, c)
               for a, b, c in zip(first, again, serial))
    still = record_raw(6, steps_per_frame=0)[0]  # no steps, fixed camera: a still image
    assert all(np.array_equal(still[0], f) for f in still[1:])
    assert not np.array_equal(first[1], still[1])


def test_follow_camera_tracks_the_core():
    _, centre, core, sim_time = record_raw(4, steps_per_frame=5, camera="follow")
    assert sim_time > 0 and np.allclose(centre, core)
    _, fixed_centre, _, _ = record_raw(4, steps_per_frame=5)
    assert not np.allclose(fixed_centre, core)


def test_ctrl_c_finishes_the_movie(tmp_path):
    """A KeyboardInterrupt after frame 12 ends with a valid movie of those 12 frames."""
    from galaxyview.render.offscreen import OffscreenRenderer

    out = tmp_path / "cut.mp4"

    def progress(done, t):
        if done == 12:
            raise KeyboardInterrupt

    writer = MovieWriter(out, 30, (160, 96))
    sim = open_simulation("cold-collapse", "cpu", 1500)
    with OffscreenRenderer(160, 96) as renderer:
        renderer.attach(sim.engine)
        done, interrupted, _, _ = record_frames(sim.engine, renderer, writer,
                                                RecordOptions(50, 30, (160, 96)), None, progress)
    sim.close()
    assert (done, interrupted) == (12, True)
    writer.close()
    assert len(read_movie(out)[1]) == 12


RECORD_SCRIPT = """import argparse, sys
from galaxyview.cli import record
parser = argparse.ArgumentParser()
record.add_record_parser(parser.add_subparsers())
sys.exit(record.run_record(parser.parse_args(["record", *sys.argv[1:]])))"""


def _size(path) -> int:
    """The file's size; 0 when it is gone (removed since it was listed)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_sigint_exits_130_with_valid_movie(tmp_path):
    """The real thing: SIGINT to the command while it records."""
    out = tmp_path / "sigint.mp4"
    proc = subprocess.Popen([sys.executable, "-c", RECORD_SCRIPT, *SCENE, "-o", str(out),
                             "--frames", "100000", *SIZE], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        # ffmpeg writes the header on frame 1 (the output check's probe .part comes and goes)
        if any(p.suffix == ".part" and _size(p) > 0 for p in tmp_path.iterdir()):
            break
        time.sleep(0.05)
    time.sleep(0.5)  # a few more frames
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    frames = read_movie(out)[1]
    assert 0 < len(frames) < 100000
    assert f"finished the movie with the {len(frames)} of 100000 frames made so far" in err
    assert [p.name for p in tmp_path.iterdir()] == ["sigint.mp4"]


def test_existing_output_refused_then_overwritten(tmp_path, capsys):
    out = tmp_path / "old.mp4"
    out.write_bytes(b"old")
    assert run_cli([*SCENE, "-o", str(out), "--frames", "2", *SIZE]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == b"old"
    assert run_cli([*SCENE, "-o", str(out), "--frames", "2", *SIZE, "--overwrite"]) == 0
    assert len(read_movie(out)[1]) == 2


@pytest.mark.parametrize("where, why", [("missing/m.mp4", "does not exist"),
                                        (".", "is a folder"), ("m.avi", "ending in .mp4")])
def test_unwritable_output_fails_before_any_work(tmp_path, monkeypatch, capsys, where, why):
    import galaxyview.simulation

    def no_work(*args, **kwargs):
        raise AssertionError("the simulation was started before the output was checked")

    monkeypatch.setattr(galaxyview.simulation, "open_simulation", no_work)
    code = run_cli([*SCENE, "-o", str(tmp_path / where), "--frames", "2", *SIZE])
    assert code == 2
    err = capsys.readouterr().err
    assert why in err and "Traceback" not in err
    assert not any(p.suffix in (".part", ".mp4") for p in tmp_path.rglob("*"))


def test_bad_scene_is_bad_input(tmp_path, capsys):
    code = run_cli(["no-such-scene", "--backend", "cpu", "-o", str(tmp_path / "x.mp4")])
    assert code == 2
    assert "no-such-scene" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_size_and_length_arguments():
    args = parse(["plummer", "-o", "m.mp4", "--duration", "2.5", "--fps", "24", "--size",
                  "640x360"])
    assert (args.duration, args.fps, args.size) == (2.5, 24, (640, 360))
    for bad in (["--size", "641x360"], ["--size", "big"], ["--fps", "0"], ["--duration", "-1"],
                ["--frames", "3", "--duration", "1"]):
        with pytest.raises(SystemExit) as info:
            parse(["plummer", "-o", "m.mp4", *bad])
        assert info.value.code == 2


def test_record_plays_an_archive_back_without_simulating(tmp_path, capsys):
    from galaxyview.cli.main import main

    arc = tmp_path / "run.h5"
    assert main(["run", *SCENE, "--steps", "6", "--archive", str(arc), "--every", "2"]) == 0
    out = tmp_path / "playback.mp4"
    code = run_cli([str(arc), "--backend", "cpu", "-o", str(out), *SIZE, "--caption"])
    assert code == 0
    _, frames = read_movie(out)
    assert len(frames) == 4  # the archive's snapshots at steps 0, 2, 4, 6
    assert all(np.abs(a.astype(int) - b).sum() > 0 for a, b in zip(frames, frames[1:]))
    # the same frames as recording the run itself every 2 steps
    live = tmp_path / "live.mp4"
    assert run_cli([*SCENE, "-o", str(live), *SIZE, "--caption", "--frames", "4",
                    "--steps-per-frame", "2"]) == 0
    _, live_frames = read_movie(live)
    for a, b in zip(frames, live_frames):
        assert np.abs(a.astype(int) - b).mean() < 1.0
    assert "playback of 4 stored snapshots" in capsys.readouterr().err
    longer = tmp_path / "longer.mp4"  # more frames than stored: the last is held, with a note
    assert run_cli([str(arc), "--backend", "cpu", "-o", str(longer), *SIZE, "--frames", "6"]) == 0
    assert len(read_movie(longer)[1]) == 6
    assert "holds 4 frames (--steps-per-frame 1); the last is held for the other 2" in \
        capsys.readouterr().err


def test_camera_path_moves_the_camera_of_each_frame(tmp_path, capsys):
    from galaxyview.render.camera_path import CameraPath, Keyframe
    from galaxyview.render.offscreen import OffscreenRenderer

    path = CameraPath([Keyframe(0.0, (0, -4, 1.5), (0, 0, 0), 45.0),
                       Keyframe(0.02, (3, -2, 0.5), (0.1, 0, 0), 30.0)])
    frames = record_raw(4, steps_per_frame=3, camera_path=path)[0]
    sim = open_simulation("cold-collapse", "cpu", 1500)  # the same, by hand
    with OffscreenRenderer(160, 96) as r:
        r.attach(sim.engine)
        for i, rgb in enumerate(frames):
            if i:
                sim.engine.step(3)
            path.apply(r.camera, sim.engine.time)
            assert np.array_equal(r.draw(), rgb), i
    sim.close()
    assert not np.array_equal(frames[0], frames[-1])

    f = tmp_path / "path.toml"
    path.save(f)
    out = tmp_path / "path.mp4"
    assert run_cli([*SCENE, "-o", str(out), "--frames", "3", *SIZE, "--camera-path", str(f)]) == 0
    assert len(read_movie(out)[1]) == 3
    bad = tmp_path / "bad.toml"
    bad.write_text("[[keyframe]]\ntime = 0\neye = [0, 0, 0]\ntarget = [0, 0, 0]\n")
    out2 = tmp_path / "bad.mp4"
    assert run_cli([*SCENE, "-o", str(out2), "--frames", "3", *SIZE, "--camera-path", str(bad)]) == 2
    assert "eye sits on the target" in capsys.readouterr().err and not out2.exists()
