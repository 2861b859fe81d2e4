"""How a scene's story plays in the viewer on the CPU engine: the particle count and the steps
per drawn frame that let `story_time` (first pericentre, tails, a collapse) unfold within about
a minute on a 2-core machine.

A cost model, not a measurement at start-up, so the same scene gives the same particle count on
every machine (the window and `galaxyview record` then show the same particles):

    step seconds  = STEP_S_PER_PARTICLE[engine] * n * (0.75 / theta)^2
    frame seconds = max(FRAME_S, steps_per_frame * step seconds + FRAME_OVERHEAD_S
                                 + HOST_S_PER_PARTICLE * n)

STEP_S_PER_PARTICLE was measured on 2 cores: the numpy engine (`reference`; antennae and
plummer, 4k-16k particles, theta 0.75: 18-24 us a particle a step) and the compiled one
(`cpu`; antennae at 20k: 1.3 us, 2.5 us while the window draws beside it); HOST_S_PER_PARTICLE
is the window's copy, upload and drawing (Mesa under Xvfb: 25 ms at 20k); FRAME_OVERHEAD_S the
rest of its work per frame. A faster machine only plays the story sooner.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

STORY_WALL_S = 60.0
STEP_S_PER_PARTICLE = {"cpu": 2.5e-6, "reference": 24e-6}  # by CPU backend
HOST_S_PER_PARTICLE = 1.25e-6  # state copy, vertices, upload and drawing of a frame
FRAME_OVERHEAD_S = 0.01
REFERENCE_THETA = 0.75
FRAME_S = 0.015  # the window's frame timer (app/playback.py FRAME_MS)
N_MIN = 2000  # fewer particles show no galaxy; the story then takes longer than the minute
N_MAX = 200_000
ROUND = 500


@dataclass(frozen=True)
class Pace:
    n: int
    steps_per_frame: int
    story_steps: int  # steps to story_time at the scene's dt
    wall_s: float  # the story's wall time by the cost model

    def describe(self) -> str:
        return (f"{self.n:,} particles, {self.steps_per_frame} step(s) a frame: the story's "
                f"{self.story_steps} steps in about {self.wall_s:.0f} s on 2 cores")


def step_seconds(n: int, theta: float, engine: str = "cpu") -> float:
    """Wall seconds of one step of CPU backend `engine` by the cost model."""
    return STEP_S_PER_PARTICLE[engine] * n * (REFERENCE_THETA / theta) ** 2


def story_wall_seconds(n: int, steps_per_frame: int, story_steps: int, theta: float,
                       engine: str = "cpu") -> float:
    frame = max(FRAME_S, steps_per_frame * step_seconds(n, theta, engine) + FRAME_OVERHEAD_S
                + HOST_S_PER_PARTICLE * n)
    return math.ceil(story_steps / steps_per_frame) * frame


def cpu_pace(story_time: float, dt: float, theta: float, n: int | None = None,
             wall_s: float = STORY_WALL_S, engine: str = "cpu") -> Pace:
    """The pace of a story of `story_time` (N-body units) at time step dt on CPU backend
    `engine` ("cpu" or "reference"). With `n` given (the scene's n_cpu or the command line's),
    only the steps per frame are chosen."""
    if engine not in STEP_S_PER_PARTICLE:
        engine = "cpu"
    if not (story_time > 0 and dt > 0 and theta > 0 and wall_s > 0):
        raise ValueError("story_time, dt, theta and wall_s must be > 0")
    steps = max(1, math.ceil(story_time / dt - 1e-9))
    if n is None:  # the most particles whose steps fit the minute, one step a frame
        per_particle = step_seconds(1, theta, engine) + HOST_S_PER_PARTICLE
        n = int((wall_s / steps - FRAME_OVERHEAD_S) / per_particle) // ROUND * ROUND
        n = min(max(n, N_MIN), N_MAX)
    # enough steps a frame that a frame carries at least a timer period of stepping
    m = max(1, math.ceil(FRAME_S / max(step_seconds(n, theta, engine), 1e-12) - 1e-9))
    m = min(m, steps)
    return Pace(int(n), m, steps, story_wall_seconds(n, m, steps, theta, engine))


@dataclass(frozen=True)
class MoviePace:
    """A movie's steps per frame that bring its last frame to the story's time."""

    steps_per_frame: int
    story_steps: int  # steps to story_time at dt
    end_time: float  # the simulation time of the last frame (story_time or a little past)

    def describe(self, story_time: float, frames: int, dt: float) -> str:
        return (f"the story's t = {story_time:g} ({self.story_steps} steps of dt {dt:g}) in "
                f"{frames} frames: {self.steps_per_frame} step(s) a frame, the last frame at "
                f"t = {self.end_time:g}")


def movie_pace(story_time: float, dt: float, frames: int) -> MoviePace:
    """Steps per frame for `frames` frames (frame 0 the initial state) to show `story_time` at
    time step dt."""
    if not (story_time > 0 and dt > 0 and frames >= 1):
        raise ValueError("story_time and dt must be > 0 and frames >= 1")
    steps = max(1, math.ceil(story_time / dt - 1e-9))
    m = max(1, math.ceil(steps / max(frames - 1, 1)))
    return MoviePace(m, steps, (frames - 1) * m * dt)
