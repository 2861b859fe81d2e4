"""The scale bar and the galaxies' names over the picture (render/annotations.py: geometry;
movie/annotations.py: drawn into frames; `record --scale-bar --labels`)."""
import math

import numpy as np
import pytest
from PIL import Image

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState
from galaxyview.model.units import UnitSystem
from galaxyview.movie.annotations import draw_labels, draw_scale_bar
from galaxyview.render.annotations import (Label, galaxy_centres, galaxy_labels,
                                           galaxy_selections, round_length, scale_bar)
from galaxyview.render.camera import Camera
from galaxyview.render.projections import Projection
from test_record import run_cli

SIZE = (1920, 1080)


def _camera(distance=50.0):
    cam = Camera()
    cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), distance, -90.0, 20.0
    return cam


def test_round_lengths():
    assert [round_length(v) for v in (1.0, 1.9, 4.99, 5.0, 14.7, 0.03)] == [1, 1, 2, 5, 10,
                                                                           0.02]


def test_the_bar_spans_its_length_at_the_focus_distance():
    cam = _camera(50.0)
    bar = scale_bar(cam, SIZE, UnitSystem(1.0, 1e10))
    per_kpc = 540 / (50 * math.tan(math.radians(22.5)))  # px a kpc at 50 kpc, 45 degrees
    assert (bar.length, bar.unit, bar.text) == (10.0, "kpc", "10 kpc")
    assert bar.pixels == pytest.approx(10 * per_kpc)
    assert bar.pixels <= 0.2 * SIZE[0]
    # two points 10 kpc apart across the view, at the centre's depth, are that far apart
    _, right, _ = cam.basis()
    ends = cam.project(np.array([-5 * right, 5 * right]), SIZE)
    assert np.linalg.norm(ends[1] - ends[0]) == pytest.approx(bar.pixels, rel=1e-9)
    cam.zoom(2.0)  # twice as close: a bar of the same length twice as long, or a shorter one
    assert scale_bar(cam, SIZE, UnitSystem(1.0, 1e10)).pixels == pytest.approx(
        5 * 2 * per_kpc)


def test_the_unit_follows_the_scene():
    cam = _camera(50.0)
    assert scale_bar(cam, SIZE, UnitSystem(0.001, 1e3)).text == "10 pc"  # a star cluster
    assert scale_bar(cam, SIZE, UnitSystem(1000.0, 1e10)).text == "10000 kpc"
    assert scale_bar(cam, SIZE, None, si=True).text == "10 m"
    assert scale_bar(_camera(5e4), SIZE, None, si=True).text == "10 km"
    assert scale_bar(cam, SIZE).text == "10 (N-body length)"


@pytest.mark.parametrize("name", ["fisheye", "equirect", "stereo-sbs", "ods"])
def test_no_bar_without_one_scale_across_the_frame(name):
    cam = _camera()
    cam.projection = Projection(name)
    assert scale_bar(cam, SIZE, UnitSystem(1.0, 1e10)) is None


def _two_galaxies():
    rng = np.random.default_rng(2)
    centres = np.array([[-2.0, 0.5, 0.0], [3.0, -1.0, 1.0]])
    pos = np.concatenate([c + 0.2 * rng.standard_normal((200, 3)) for c in centres])
    state = ParticleState(pos.astype(np.float32), np.zeros_like(pos, np.float32),
                          np.full(400, 1 / 400), np.full(400, Component.DISK, np.uint8))
    state.galaxy[200:] = 1
    state.component[::7] = Component.HALO  # not in the centre the label marks
    state.pos[::7] = 30.0
    engine = CPUEngine(Params(), gravity="direct")
    engine.load(state)
    lit = state.component != Component.HALO
    want = [state.pos[lit & (state.galaxy == g)].astype(np.float64).mean(axis=0)
            for g in (0, 1)]
    return engine, want


def test_a_label_lands_at_the_projected_centre_of_its_galaxy():
    engine, want = _two_galaxies()
    try:
        centres = galaxy_centres(engine, galaxy_selections([0, 1]))
    finally:
        engine.close()
    assert np.allclose(centres, want, atol=1e-5)
    cam = _camera(12.0)
    labels = galaxy_labels(cam, SIZE, centres, ["NGC 4038", "NGC 4039"])
    assert [label.text for label in labels] == ["NGC 4038", "NGC 4039"]
    got = np.array([(label.x, label.y) for label in labels])
    assert np.allclose(got, cam.project(np.array(centres), SIZE), atol=0.01)
    cam.projection = Projection("stereo-sbs")  # one in each eye
    assert len(galaxy_labels(cam, SIZE, centres, ["a", "b"])) == 4
    cam.projection = Projection()
    cam.set_view(eye=(0.0, -20.0, 0.0), target=(0.0, -40.0, 0.0))  # both behind the camera
    assert galaxy_labels(cam, SIZE, centres, ["a", "b"]) == []


def test_drawn_bar_and_label():
    rgb = np.zeros((540, 960, 3), np.uint8)
    cam = _camera(50.0)
    bar = scale_bar(cam, (960, 540), UnitSystem(1.0, 1e10))
    draw_scale_bar(rgb, bar)
    white = np.argwhere(rgb.min(axis=-1) == 255)
    bottom = white[white[:, 0] > 500]  # the bar (its text is above it)
    assert bottom[:, 1].max() - bottom[:, 1].min() + 1 == round(bar.pixels)
    assert bottom[:, 1].max() > 940  # at the right
    rgb[:] = 0
    draw_labels(rgb, [Label("NGC 4038", 300.0, 200.0)])
    assert (rgb[200, 300] == 255).all()  # the mark at the centre
    text = np.argwhere(rgb[:195].min(axis=-1) == 255)
    assert abs(text[:, 1].mean() - 300) < 15 and text[:, 0].max() < 200  # centred, above
    draw_labels(rgb, [Label("edge", -5.0, 3.0), Label("far", 5000.0, 5000.0)])  # clipped


def test_record_burns_in_the_bar_and_the_names(tmp_path, capsys):
    scene = ["antennae", "--backend", "cpu", "--n", "3000", "--frames", "1", "--size",
             "320x180"]
    frames = {}
    for name, extra in {"plain": [], "both": ["--labels", "--scale-bar"],
                        "dome": ["--projection", "fisheye", "--size", "320x320"],
                        "dome-bar": ["--projection", "fisheye", "--size", "320x320",
                                     "--scale-bar"]}.items():
        assert run_cli([*scene, "--png-dir", str(tmp_path / name), *extra]) == 0, \
            capsys.readouterr().err
        frames[name] = np.asarray(Image.open(tmp_path / name / "00000.png")).astype(int)
    changed = np.abs(frames["both"] - frames["plain"]).max(axis=-1) > 60
    assert changed[140:, 200:].sum() > 50  # the bar and its text, bottom right
    assert changed[:140].sum() > 50  # the two names
    assert np.array_equal(frames["dome-bar"], frames["dome"])  # no one scale: no bar
