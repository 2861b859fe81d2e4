"""`galaxyview record` paced to the story: --story T, or the scene's story_time, picks the
steps per frame so that the last frame reaches the story's time (model/pace.py movie_pace)."""
import numpy as np
import pytest
from PIL import Image

from galaxyview.model.pace import movie_pace
from test_record import SCENE, parse, run_cli

PLUMMER = ["plummer", "--backend", "cpu", "--n", "1000"]  # dt 1/64, no story_time
SMALL = ["--size", "96x64"]


def frames(folder):
    return [np.asarray(Image.open(p)) for p in sorted(folder.iterdir())]


def test_movie_pace_reaches_the_story_in_the_frames():
    p = movie_pace(1.3, 1 / 512, 20)
    assert p.story_steps == 666 and p.steps_per_frame == 36  # ceil(666 / 19)
    assert 1.3 <= p.end_time < 1.3 + 36 / 512
    assert movie_pace(0.01, 1 / 64, 300).steps_per_frame == 1  # never fewer than one
    assert movie_pace(1.0, 0.25, 1).steps_per_frame == 4  # one frame: straight to the end
    with pytest.raises(ValueError):
        movie_pace(0.0, 0.1, 10)


def test_story_option_gives_the_frames_of_its_steps_per_frame(tmp_path, capsys):
    assert run_cli([*PLUMMER, *SMALL, "--frames", "3", "--story", "0.5",
                    "--png-dir", str(tmp_path / "story")]) == 0
    said = capsys.readouterr().err
    assert ("pace: the story's t = 0.5 (32 steps of dt 0.015625) in 3 frames: 16 step(s) a "
            "frame, the last frame at t = 0.5") in said
    assert run_cli([*PLUMMER, *SMALL, "--frames", "3", "--steps-per-frame", "16",
                    "--png-dir", str(tmp_path / "fixed")]) == 0
    assert "pace:" not in capsys.readouterr().err
    a, b = frames(tmp_path / "story"), frames(tmp_path / "fixed")
    assert len(a) == 3 and all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], a[2])


def test_a_scene_with_a_story_is_paced_unless_steps_are_given(tmp_path, capsys):
    assert run_cli([*SCENE, *SMALL, "--frames", "5", "--png-dir", str(tmp_path / "a")]) == 0
    assert "pace: the story's t = 1.3 (666 steps" in capsys.readouterr().err  # cold-collapse
    assert run_cli([*SCENE, *SMALL, "--frames", "5", "--steps-per-frame", "1",
                    "--png-dir", str(tmp_path / "b")]) == 0
    assert "pace:" not in capsys.readouterr().err
    paced, slow = frames(tmp_path / "a"), frames(tmp_path / "b")
    lit = [(f.max(axis=-1) > 40).mean() for f in (paced[-1], slow[-1])]
    assert lit[0] < 0.5 * lit[1]  # collapsed by the story's end; barely moved in 4 steps
    with pytest.raises(SystemExit):
        parse([*SCENE, "-o", "m.mp4", "--story", "1", "--steps-per-frame", "2"])
    with pytest.raises(SystemExit):
        parse([*SCENE, "-o", "m.mp4", "--story", "-1"])


def test_story_does_not_pace_an_archive(tmp_path, capsys):
    from galaxyview.cli.main import main

    arc = tmp_path / "run.h5"
    assert main(["run", *PLUMMER, "--steps", "2", "--archive", str(arc), "--every", "1"]) == 0
    capsys.readouterr()
    assert run_cli([str(arc), "--backend", "cpu", "-o", str(tmp_path / "m.mp4"), *SMALL,
                    "--story", "1"]) == 2
    assert "--story paces a simulation" in capsys.readouterr().err
    assert not (tmp_path / "m.mp4").exists()
