"""The CPU viewer's pace (model/pace.py): particle count and steps per frame that play a scene's
story in about a minute on 2 cores; n_cpu and the command line override it."""
import textwrap
import tomllib

import pytest

from galaxyview.model import pace
from galaxyview.model.scene import load_scene, parse_scene, shipped_scenes


@pytest.mark.parametrize("story_time, dt, theta", [(60, 0.1, 0.75), (1.5, 1 / 512, 0.6),
                                                   (32, 0.1, 0.75), (4, 1 / 64, 0.4)])
def test_the_story_fits_the_minute(story_time, dt, theta):
    p = pace.cpu_pace(story_time, dt, theta)
    assert p.story_steps == pytest.approx(story_time / dt, abs=1)
    assert pace.N_MIN <= p.n <= pace.N_MAX and p.n % pace.ROUND == 0
    assert p.wall_s == pace.story_wall_seconds(p.n, p.steps_per_frame, p.story_steps, theta)
    if p.n > pace.N_MIN:
        assert p.wall_s <= pace.STORY_WALL_S
        # the most particles that fit: one more rounding step would not
        more = pace.story_wall_seconds(p.n + pace.ROUND, 1, p.story_steps, theta)
        assert more > pace.STORY_WALL_S or p.n + pace.ROUND > pace.N_MAX


def test_cheap_steps_are_batched_into_frames():
    p = pace.cpu_pace(5.0, 0.01, 0.75, n=100)  # 0.25 ms steps: many a frame
    assert p.steps_per_frame == pace.math.ceil(pace.FRAME_S / pace.step_seconds(100, 0.75))
    assert pace.step_seconds(100, 0.75) * p.steps_per_frame >= pace.FRAME_S
    assert pace.cpu_pace(60, 0.1, 0.75, n=100_000).steps_per_frame == 1  # slow steps: one
    assert pace.cpu_pace(0.05, 0.01, 0.75, n=10).steps_per_frame == 5  # never past the story


def test_a_smaller_theta_costs_more_so_fewer_particles():
    assert pace.cpu_pace(60, 0.1, 0.5).n < pace.cpu_pace(60, 0.1, 0.75).n


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        pace.cpu_pace(0, 0.1, 0.75)


SCENE = """\
[scene]
name = "s"
description = "d"
seed = 1
{n_cpu}
story_time = 4.0
n_gpu = 5000
[params]
dt = 0.015625
[model]
type = "plummer"
"""


def _scene(n_cpu=""):
    return parse_scene(tomllib.loads(textwrap.dedent(SCENE.format(n_cpu=n_cpu))), "s.toml")


def test_scene_pace_picks_n_unless_n_cpu_is_given():
    paced = _scene()
    assert paced.n_cpu is None and paced.default_n("cpu") == paced.cpu_pace().n
    assert paced.default_n("gpu") == 5000
    assert paced.build().n == paced.cpu_pace().n
    given = _scene("n_cpu = 700")
    assert given.default_n("cpu") == 700 and given.cpu_pace().n == 700
    assert given.cpu_pace(300).n == 300  # the command line's count


@pytest.mark.parametrize("name", [name for name, _, _ in shipped_scenes()])
def test_shipped_story_scenes_play_within_about_a_minute(name):
    scene = load_scene(name)
    p = scene.cpu_pace()
    if scene.story_time is None:
        assert p is None and scene.n_cpu is not None
        return
    assert p.wall_s <= 1.05 * pace.STORY_WALL_S and p.n >= pace.N_MIN
    assert p.story_steps * scene.params.dt >= scene.story_time
