"""`galaxyview record` takes the look: a look file saved from the window (render/look_file.py)
and the look options, which change it."""
import numpy as np
import pytest
from PIL import Image

from galaxyview.errors import ParameterError, SceneError
from galaxyview.render.look import Look
from galaxyview.render.look_file import load_look, save_look
from test_record import SCENE, parse, run_cli

SMALL = ["--frames", "1", "--size", "96x64"]


def frame(folder):
    return np.asarray(Image.open(folder / "00000.png")).astype(int)


def test_look_file_round_trip_and_errors(tmp_path):
    look = Look(point_size=5.0, exposure=2.5, colour_mode="speed", colour_map="inferno",
                tone_map="reinhard", value_range=(0.0, 2.0), bloom=0.4, bloom_radius=5.0)
    path = save_look(look, tmp_path / "look.toml")
    assert Look(**load_look(path)) == look
    with pytest.raises(ParameterError, match="already exists"):
        save_look(look, path)
    for text, words in [('exposure = -1', "exposure"), ('colour_mode = "pink"', "colour_mode"),
                        ('expsure = 2', "expsure"), ('value_range = [2.0, 1.0]', "value_range"),
                        ('bloom = 2', "bloom"), ('bloom_radius = 0', "bloom_radius")]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(SceneError, match=words) as info:
            load_look(bad)
        assert "bad.toml" in str(info.value)


def test_record_uses_the_look_file_and_the_options_change_it(tmp_path, capsys):
    save_look(Look(exposure=6.0, point_size=4.0), tmp_path / "bright.toml")
    runs = {"default": [], "file": ["--look", str(tmp_path / "bright.toml")],
            "option": ["--look", str(tmp_path / "bright.toml"), "--exposure", "1",
                       "--point-size", "3"],
            "z": ["--colour", "z"],
            "map": ["--colour", "z", "--colour-map", "hot", "--tone-map", "linear"]}
    frames = {}
    for name, extra in runs.items():
        assert run_cli([*SCENE, "--png-dir", str(tmp_path / name), *SMALL, *extra]) == 0, \
            capsys.readouterr().err
        frames[name] = frame(tmp_path / name)
    assert frames["file"].mean() > 1.5 * frames["default"].mean()
    assert np.array_equal(frames["option"], frames["default"])  # the options win
    lit = frames["map"].max(axis=-1) > 40
    assert lit.mean() > 0.005
    hot, viridis = frames["map"][lit], frames["z"][lit]
    assert hot[:, 0].mean() > hot[:, 2].mean() + 30  # hot: reds and yellows
    assert viridis[:, 2].mean() > hot[:, 2].mean() + 15  # viridis: blues and greens
    assert run_cli([*SCENE, "--png-dir", str(tmp_path / "x"), *SMALL, "--look",
                    str(tmp_path / "missing.toml")]) == 2
    assert "missing.toml" in capsys.readouterr().err
    assert run_cli([*SCENE, "--png-dir", str(tmp_path / "y"), *SMALL,
                    "--point-size", "100"]) == 2
    assert "point_size" in capsys.readouterr().err


def test_record_bloom_from_the_option_and_the_look_file(tmp_path, capsys):
    save_look(Look(exposure=40.0, bloom=0.9, bloom_radius=30.0), tmp_path / "glow.toml")
    runs = {"plain": ["--exposure", "40"], "off": ["--exposure", "40", "--bloom", "0"],
            "option": ["--exposure", "40", "--bloom", "0.9", "--bloom-radius", "30"],
            "file": ["--look", str(tmp_path / "glow.toml")]}
    frames = {}
    for name, extra in runs.items():
        assert run_cli([*SCENE, "--png-dir", str(tmp_path / name), *SMALL, *extra]) == 0, \
            capsys.readouterr().err
        frames[name] = frame(tmp_path / name)
    assert np.array_equal(frames["off"], frames["plain"])
    assert np.array_equal(frames["file"], frames["option"])
    dark = frames["plain"].max(axis=-1) < 20
    assert (frames["option"][dark].max(axis=-1) > frames["plain"][dark].max(axis=-1)).mean() > 0.05
    assert run_cli([*SCENE, "--png-dir", str(tmp_path / "bad"), *SMALL, "--bloom-radius",
                    "40"]) == 2
    assert "bloom_radius" in capsys.readouterr().err


def test_help_says_where_the_look_comes_from(capsys):
    with pytest.raises(SystemExit):
        parse(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "with the viewer's look" not in text
    assert "--look FILE.toml" in text and "Save look" in text
    for option in ("--exposure", "--point-size", "--colour-map", "--tone-map", "--colour",
                   "--bloom", "--bloom-radius"):
        assert option in text
