"""Headless movie recording: step the engine, draw offscreen, caption, encode.

One frame = `steps_per_frame` steps, one draw (one pixel read-back) and one add_frame; for an
mp4 the frame is converted to I420 with its caption on the GPU (render/yuv.py) and read back as
such, for PNG frames it is read as RGB and captioned on the host. The
encoder runs in its own thread and process, so encoding overlaps with the next frame's steps
and draw. Frame i shows the state after i * steps_per_frame steps (frame 0 is the initial state).
Nothing here is random: the same scene, seed, parameters and engine give the same frames.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError, ParameterError
from galaxyview.interrupt import Interrupt
from galaxyview.model.state import Component, Selection
from galaxyview.model.units import in_seconds
from galaxyview.movie.caption import caption_overlay, caption_text, draw_caption
from galaxyview.movie.encoder import MovieError, MovieWriter, check_fps, check_size
from galaxyview.progress import bar as progress_bar
from galaxyview.render import rings
from galaxyview.render.projections import WIDE, WIDE_FIT_DEG, WRAPS, Projection
from galaxyview.render.yuv import i420_from_rgb

CAMERAS = ("fixed", "orbit", "follow")
ORBIT_DEG_PER_S = 12.0  # orbit camera: one turn per 30 s of movie


@dataclass
class RecordOptions:
    frames: int = 300
    fps: int = 30
    size: tuple = (1920, 1080)
    steps_per_frame: int = 1
    camera: str = "fixed"
    caption: bool = False
    overwrite: bool = False
    crf: int = 18
    preset: str = "auto"  # x264's: movie/encoder.py auto_preset
    overlap: bool = True  # step in a thread during read-back (False: one thing at a time)
    camera_path: object = None  # a render.camera_path.CameraPath: the camera at each frame's time
    projection: Projection = field(default_factory=Projection)  # render/projections
    labels: bool = False  # the galaxies' names at their centres (render/annotations.py)
    scale_bar: bool = False  # a scale bar in the scene's length unit (perspective only)

    def validate(self) -> "RecordOptions":
        if isinstance(self.frames, bool) or not isinstance(self.frames, int) or self.frames < 1:
            raise ParameterError(f"frames must be a whole number >= 1, got {self.frames!r}")
        if (isinstance(self.steps_per_frame, bool) or not isinstance(self.steps_per_frame, int)
                or self.steps_per_frame < 0):
            raise ParameterError(f"steps per frame must be a whole number >= 0, got "
                                 f"{self.steps_per_frame!r}")
        if self.camera not in CAMERAS:
            raise ParameterError(f"camera must be one of {', '.join(CAMERAS)}, got {self.camera!r}")
        self.fps = check_fps(self.fps)
        self.size = check_size(self.size)
        self.projection = self.projection.validate()
        return self


@dataclass
class RecordResult:
    path: Path | None
    frames: int  # frames in the movie
    requested: int
    interrupted: bool = False
    failure: str | None = None  # what stopped the recording early, if anything
    wall_s: float = 0.0  # from the first step to the finished file
    sim_time: float = 0.0  # N-body time of the last frame
    phases_s: dict = field(default_factory=dict)  # main-thread seconds per part, in total

    @property
    def fps(self) -> float:
        return self.frames / self.wall_s if self.wall_s > 0 else 0.0


def follow_target(sim):
    """A callable giving the point the follow camera tracks for Simulation `sim`: the centre
    of mass of the first galaxy's core (its bulge and black hole particles); without those,
    the tenth of its particles nearest its initial centre, or where the initial state was made
    in parts (no whole copy here), all of the first galaxy. Chosen once, from the initial
    state; a Selection where it can be, so each process finds its own members."""
    start, engine = sim.initial_sample, sim.engine
    first = int(start.galaxy.min())
    core = Selection(first, (int(Component.BULGE), int(Component.BLACK_HOLE)))
    if core.mask(start.component, start.galaxy).any():
        select = core
    elif sim.initial is None:
        select = Selection(first)
    else:
        initial = sim.initial
        mine = initial.galaxy == first
        pos = initial.pos[mine].astype(np.float64)
        centre = np.average(pos, axis=0, weights=initial.mass[mine] + 1e-30)
        r = np.linalg.norm(pos - centre, axis=1)
        select = np.zeros(initial.n, dtype=bool)
        select[np.flatnonzero(mine)[r <= np.quantile(r, 0.1)]] = True

    def target():
        return engine.centre_of_mass(select)

    return target


class _Stepper:
    """Runs engine.step(m) in a worker thread, so the next frame's steps overlap with the pixel
    read-back, caption and hand-over of the current one. Exceptions come back in wait()."""

    def __init__(self, engine, m: int):
        self.engine, self.m = engine, m
        self._thread = None
        self._error = None

    def start(self) -> None:
        def run():
            try:
                self.engine.step(self.m)
            except BaseException as exc:  # handed to the main thread by wait()
                self._error = exc

        self._thread = threading.Thread(target=run, name="movie-step", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        if self._thread is None:
            return
        while self._thread.is_alive():  # join in slices: Ctrl-C stays responsive
            self._thread.join(timeout=0.1)
        self._thread = None
        error, self._error = self._error, None
        if error is not None:
            raise error


def record_frames(engine, renderer, writer, options: RecordOptions, caption=None,
                  progress=None, annotate=None) -> tuple[int, bool, str | None, dict]:
    """The frame loop. caption(sim_time) -> text, or None; progress(frames_done, sim_time);
    annotate() -> a function that draws into a frame (the scale bar and labels of the view just
    rendered), asked while the engine is idle, or None.

    With a renderer that separates render_frame() and read(), the steps towards frame i+1 run
    in a thread while frame i is read back, captioned and queued for the encoder (the GPU
    vertex buffer already holds frame i by then); otherwise frames are draw()n one at a time.
    Returns (frames written, interrupted by Ctrl-C, failure message or None, phase seconds).
    A KeyboardInterrupt or a GalaxyviewError (e.g. the state went NaN) ends the loop early;
    the frames made so far stay valid.
    """
    camera = renderer.camera
    d_azimuth = ORBIT_DEG_PER_S / options.fps if options.camera == "orbit" else 0.0
    overlap = options.overlap and hasattr(renderer, "render_frame") and hasattr(renderer, "read")
    # frames for a yuv420p writer converted (and captioned) on the GPU: half the bytes to read
    i420 = getattr(writer, "pixel_format", "rgb24") == "yuv420p"
    if i420 and not hasattr(renderer, "read_i420"):
        raise ParameterError("this renderer makes RGB frames: give the movie writer "
                             "pixel_format='rgb24'")
    stepper = _Stepper(engine, options.steps_per_frame)
    spent = {"step_wait": 0.0, "render": 0.0, "read": 0.0, "caption": 0.0, "encode_wait": 0.0}
    done, interrupted, failure = 0, False, None
    interrupt = Interrupt()  # Ctrl-C: the frame in hand is finished first
    try:
        with interrupt.deferred():
            for i in range(options.frames):
                t0 = time.perf_counter()
                if i and options.steps_per_frame:
                    if overlap:
                        stepper.wait()
                    else:
                        engine.step(options.steps_per_frame)
                if i and d_azimuth:
                    camera.orbit(d_azimuth)
                t1 = time.perf_counter()
                sim_time = engine.time  # of this frame (the stepper may run on during read-back)
                if options.camera_path is not None:
                    options.camera_path.apply(camera, sim_time)
                if overlap or i420:
                    renderer.render_frame()
                    draw = annotate() if annotate is not None else None
                    if overlap and i + 1 < options.frames and options.steps_per_frame:
                        stepper.start()
                    t2 = time.perf_counter()
                else:
                    frame = renderer.draw()  # (render and read back)
                    draw = annotate() if annotate is not None else None
                    t2 = time.perf_counter()
                text = caption(sim_time) if caption is not None else None
                if i420 and draw is None:  # the caption composed on the GPU, to I420
                    over = caption_overlay(text, *options.size) if text else None
                    t3 = time.perf_counter()
                    frame = renderer.read_i420(over)
                    t4 = time.perf_counter()
                    read_s, caption_s = t4 - t3, t3 - t2
                else:  # names and a scale bar: drawn on the host, on RGB
                    if overlap or i420:
                        frame = renderer.read()
                    t3 = time.perf_counter()
                    if draw is not None:
                        draw(frame)
                    if text:
                        draw_caption(frame, text)
                    if i420:
                        frame = i420_from_rgb(frame)
                    t4 = time.perf_counter()
                    read_s, caption_s = t3 - t2, t4 - t3
                writer.add_frame(frame, copy=False)
                t5 = time.perf_counter()
                done += 1
                for key, dt in zip(spent, (t1 - t0, t2 - t1, read_s, caption_s, t5 - t4)):
                    spent[key] += dt
                if progress is not None:
                    progress(done, sim_time)
                if interrupt.requested:
                    interrupted = True
                    break
    except KeyboardInterrupt:
        interrupted = True
    except MovieError:
        raise  # the encoder failed: there is no movie to keep
    except GalaxyviewError as exc:
        failure = str(exc)
    finally:
        try:
            stepper.wait()  # never leave a step running on the engine
        except BaseException:
            pass
    return done, interrupted, failure, spent


def galaxy_names(sim) -> tuple[list[int], list[str]]:
    """(galaxy indices, their names) of a Simulation's scene or snapshot: those with a name."""
    names = (sim.initial_sample.meta.get("galaxies") or ()) if sim.initial_sample else ()
    present = np.unique(sim.initial_sample.galaxy) if names else ()
    pairs = [(int(g), str(names[g])) for g in present if 0 <= g < len(names) and names[g]]
    return [g for g, _ in pairs], [name for _, name in pairs]


def annotations(sim, renderer, options: RecordOptions, si: bool):
    """RecordOptions' scale bar and labels as record_frames' `annotate`, or None."""
    if not (options.labels or options.scale_bar):
        return None
    from galaxyview.movie.annotations import draw_labels, draw_scale_bar
    from galaxyview.render.annotations import (galaxy_centres, galaxy_labels,
                                               galaxy_selections, scale_bar)

    galaxies, names = galaxy_names(sim) if options.labels else ([], [])
    selections = galaxy_selections(galaxies)

    def annotate():
        size, camera = options.size, renderer.camera
        bar = scale_bar(camera, size, sim.units, si) if options.scale_bar else None
        labels = galaxy_labels(camera, size, galaxy_centres(sim.engine, selections), names)

        def draw(rgb):
            draw_labels(rgb, labels)
            draw_scale_bar(rgb, bar)

        return draw

    return annotate


STEREO_LAYOUT = {"stereo-sbs": "left-right", "stereo-tb": "top-bottom", "ods": "top-bottom"}


def add_metadata(path, projection: Projection) -> None:
    """What players need to know of a projection's mp4 (movie/spherical.py): 360 movies get the
    Spherical Video V1 XML, stereo ones (flat or 360) the V2 st3d box with their layout."""
    from galaxyview.movie.spherical import add_spherical_metadata, add_stereo_metadata

    stereo = STEREO_LAYOUT.get(projection.name, "mono")
    if projection.name in WRAPS:
        add_spherical_metadata(path, stereo)
    elif stereo != "mono":
        add_stereo_metadata(path, stereo)


def record_simulation(sim, writer: MovieWriter, options: RecordOptions, *, look=None,
                      renderer=None, show_progress: bool = True) -> RecordResult:
    """Record `options.frames` frames of a loaded Simulation into `writer`, then close it.

    renderer: an OffscreenRenderer to reuse (kept open), or None for a new one of options.size.
    Ctrl-C or an engine failure finishes the movie with the frames made so far.
    """
    own = renderer is None
    if own:
        from galaxyview.render.offscreen import OffscreenRenderer

        renderer = OffscreenRenderer(*options.size, look=look)
    bar = None
    try:
        renderer.attach(sim.engine)  # frames the camera on the initial state
        renderer.camera.projection = options.projection
        if options.projection.name in WIDE:  # the particles across a quarter of the sky
            renderer.camera.fov_deg = WIDE_FIT_DEG
            renderer.camera.fit()
        sheet = sim.engine.params.sheet
        if sheet is not None:  # a ring: spheres, seen from above
            renderer.look = rings.ring_look(renderer.look, sheet)
            rings.view(renderer.camera, sheet, "top")
        if options.camera == "follow":
            renderer.camera.follow(follow_target(sim))
        myr = sim.units.time_myr if sim.units else None
        seconds = in_seconds(sim.engine.params.G)
        caption = (lambda t: caption_text(sim.name, t, myr, seconds)) if options.caption else None
        annotate = annotations(sim, renderer, options, seconds)
        bar = progress_bar(options.frames, f"{sim.name} -> {writer.path.name}", "frame",
                           disable=not show_progress)  # (lines in a log)

        def progress(done, t):
            if done == 1 and renderer.notice:
                bar.write(f"galaxyview record: {renderer.notice} ({renderer.source.failure})",
                          file=sys.stderr)
            bar.set_postfix_str(f"t = {t * myr:.1f} Myr" if myr else f"t = {t:.3f}",
                                refresh=False)
            bar.update(1)

        start = time.perf_counter()
        done, interrupted, failure, spent = record_frames(sim.engine, renderer, writer, options,
                                                          caption, progress, annotate)
    finally:
        if bar is not None:
            bar.close()
        if own:
            renderer.close()
    if not done:
        writer.abort()
        return RecordResult(None, 0, options.frames, interrupted, failure)
    path = writer.close()
    if isinstance(writer, MovieWriter):
        add_metadata(path, options.projection)
    return RecordResult(path, done, options.frames, interrupted, failure,
                        time.perf_counter() - start, sim.engine.time, spent)
