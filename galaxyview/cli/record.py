"""`galaxyview record`: argument parsing for headless movie recording (work in galaxyview.movie).

Exit codes: 0 movie written; 1 the recording failed part way (the frames made so far are kept
when there are any); 2 bad input (nothing was simulated); 130 interrupted by Ctrl-C (the movie
holds the frames made so far).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from galaxyview.cli import common
from galaxyview.cli.output import making_bar, say
from galaxyview.errors import GalaxyviewError
from galaxyview.movie.encoder import PRESETS, MovieError, check_size
from galaxyview.model.pace import movie_pace
from galaxyview.movie.recorder import CAMERAS
from galaxyview.render.look import COLOUR_MAPS, COLOUR_MODES, TONE_MAPS, Look

DEFAULT_SECONDS = 10.0


def size_type(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT (e.g. 1920x1080)") from None
    try:
        return check_size((width, height))
    except MovieError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def fps_type(text: str) -> int:
    value = common.count_type(text)
    if value > 240:
        raise argparse.ArgumentTypeError(f"at most 240 frames per second, got {value}")
    return value


def seconds_type(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 24 * 3600:
        raise argparse.ArgumentTypeError(f"duration must be in (0, 86400] seconds, got {text}")
    return value


def fraction_type(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def crf_type(text: str) -> int:
    value = common.whole_number(text)
    if not 0 <= value <= 51:
        raise argparse.ArgumentTypeError(f"crf must be in 0..51, got {value}")
    return value


def add_record_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "record", help="record a movie headless (H.264 mp4)",
        description="Evolve a scene or snapshot and record it as an H.264 mp4 movie, headless "
                    "(EGL on an NVIDIA GPU, offscreen Mesa otherwise), no UI in the frames, in "
                    "the window's default look or one saved from it (File > Save look…, "
                    "--look), changed by the look options. "
                    "Frame 0 is the initial state; each later frame is --steps-per-frame steps on. "
                    "An archive of several snapshots (galaxyview run --archive) is played back "
                    "without simulating: one snapshot a frame (every M-th with "
                    "--steps-per-frame M), all of them unless --frames is given.")
    p.add_argument("source", metavar="SCENE|SNAPSHOT|ARCHIVE",
                   help="a shipped scene's name, a .toml scene file, a snapshot, or an archive "
                        "to play back")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output", metavar="FILE.mp4|DIR/%05d.png",
                     help="the movie to write, or numbered PNG frames (a %%d pattern ending "
                          "in .png: what planetarium playback systems take)")
    out.add_argument("--png-dir", metavar="DIR",
                     help="write numbered PNG frames DIR/00000.png, DIR/00001.png, ... instead "
                          "of a movie (DIR is made if missing)")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--frames", type=common.count_type, metavar="K",
                        help="number of frames (default: 10 s worth)")
    length.add_argument("--duration", type=seconds_type, metavar="S",
                        help="movie length in seconds (frames = S x fps)")
    p.add_argument("--fps", type=fps_type, default=30, help="frames per second (30)")
    p.add_argument("--size", type=size_type, default=(1920, 1080), metavar="WxH",
                   help="frame size in pixels, both even (1920x1080)")
    pace = p.add_mutually_exclusive_group()
    pace.add_argument("--steps-per-frame", type=common.count_type, metavar="M",
                      help="simulation steps between frames (default: paced to the story, "
                           "--story or the scene's story_time; else 1)")
    pace.add_argument("--story", type=common.positive_number, metavar="T",
                      help="the simulation time the movie shows, N-body units (seconds for a "
                           "scene in SI units): the steps per frame are chosen so that the last "
                           "frame reaches it (default: the scene's story_time, where it has one)")
    common.add_projection(p, movies=True)
    p.add_argument("--camera", choices=CAMERAS, default="fixed",
                   help="fixed: framed on the initial state; orbit: turns about the vertical "
                        "axis, 12 degrees per movie second; follow: tracks the first galaxy's "
                        "core (fixed)")
    p.add_argument("--camera-path", metavar="FILE.toml",
                   help="move the camera along a camera path (keyframes saved by the viewer; "
                        "docs/viewer.md); replaces --camera")
    common.add_backend(p)
    common.add_physics(p)
    p.add_argument("--caption", action="store_true", help="burn in the scene name and the time")
    p.add_argument("--labels", action="store_true",
                   help="burn in the galaxies' names at their centres of mass")
    p.add_argument("--scale-bar", action="store_true",
                   help="burn in a scale bar in the scene's length unit (kpc), its length at "
                        "the camera's focus distance (perspective only: none in the other "
                        "projections)")
    look = p.add_argument_group("look", "the look file's settings, or the window's defaults, "
                                        "changed by these")
    look.add_argument("--look", metavar="FILE.toml",
                      help="a look saved from the window (File > Save look…)")
    look.add_argument("--colour", choices=COLOUR_MODES,
                      help="colour by: component, galaxy of origin, stellar population (old "
                           "bulge warm, young disk blue-white), speed, potential, binding "
                           "energy, local density or mass (a star cluster's IMF) (component)")
    look.add_argument("--colour-map", choices=COLOUR_MAPS,
                      help="the colour map of the colourings by value (viridis)")
    look.add_argument("--exposure", type=common.positive_number, metavar="X",
                      help="light multiplier before tone mapping (1)")
    look.add_argument("--point-size", type=common.positive_number, metavar="PX",
                      help="sprite diameter in pixels, 0.5..64 (3)")
    look.add_argument("--tone-map", choices=TONE_MAPS,
                      help="exp, reinhard (both keep dense cores from burning out) or linear "
                           "(exp)")
    look.add_argument("--bloom", type=fraction_type, metavar="S",
                      help="a glow around the brightest light: the fraction 0..1 of the light "
                           "above the tone map's knee spread into a gaussian around it (0: off)")
    look.add_argument("--bloom-radius", type=common.positive_number, metavar="PX",
                      help="the glow's gaussian sigma in pixels of a 1080-line frame, "
                           "0.5..32 (8)")
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")
    p.add_argument("--crf", type=crf_type, default=18,
                   help="x264 quality, 0 (lossless) .. 51 (worst); 18 looks lossless (18)")
    p.add_argument("--preset", choices=PRESETS, default="auto",
                   help="x264 speed/size trade-off (auto: veryfast up to 2560x1440, "
                        "superfast above)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def record_look(args) -> Look:
    """The look of the movie: the look file's (or the defaults), then the options given."""
    changes = {}
    if args.look:
        from galaxyview.render.look_file import load_look

        changes = load_look(args.look)
    for key, value in (("colour_mode", args.colour), ("colour_map", args.colour_map),
                       ("exposure", args.exposure), ("point_size", args.point_size),
                       ("tone_map", args.tone_map), ("bloom", args.bloom),
                       ("bloom_radius", args.bloom_radius)):
        if value is not None:
            changes[key] = value
    return Look(**changes)


def run_record(args) -> int:
    from galaxyview.movie.encoder import MovieWriter
    from galaxyview.movie.frames import FrameWriter
    from galaxyview.movie.recorder import RecordOptions, record_simulation

    frames = args.frames or max(1, round((args.duration or DEFAULT_SECONDS) * args.fps))
    writer = None
    try:
        camera_path = None
        if args.camera_path:
            from galaxyview.render.camera_path import CameraPath

            camera_path = CameraPath.load(args.camera_path)
        look = record_look(args)
        projection = common.projection_of(args)
        options = RecordOptions(frames, args.fps, args.size, args.steps_per_frame or 1,
                                args.camera,
                                args.caption, args.overwrite, args.crf, args.preset,
                                camera_path=camera_path, projection=projection,
                                labels=args.labels, scale_bar=args.scale_bar).validate()
        # the output is checked (and its temporary file made) before any simulation work
        if args.png_dir or str(args.output).lower().endswith(".png"):
            pattern = str(Path(args.png_dir) / "%05d.png") if args.png_dir else args.output
            writer = FrameWriter(pattern, options.fps, options.size, args.overwrite,
                                 frames=frames)
        else:
            writer = MovieWriter(args.output, options.fps, options.size, args.overwrite,
                                 crf=options.crf, preset=options.preset,
                                 # converted on the GPU, except where names or a scale bar
                                 # are drawn on the host: then ffmpeg converts RGB
                                 pixel_format="rgb24" if args.labels or args.scale_bar
                                 else "yuv420p")
        from galaxyview.simulation import open_simulation

        with making_bar() as made:
            sim = open_simulation(args.source, args.backend, args.n, args.theta, args.dt,
                                  args.eps, progress=made, **common.engine_options(args))
        if sim.engine.frame_count is not None:  # an archive: its snapshots, one a frame
            if args.story:
                sim.close()
                raise GalaxyviewError(f"{args.source} is played back, one snapshot a frame: "
                                      "--story paces a simulation; use --steps-per-frame")
            every = options.steps_per_frame
            stored = 1 + (sim.engine.frame_count - 1) // every
            frames = options.frames = args.frames or (
                round(args.duration * args.fps) if args.duration else stored)
            if frames > stored:
                say(f"galaxyview record: note: {args.source} holds {stored} frames "
                    f"(--steps-per-frame {every}); the last is held for the other "
                    f"{frames - stored}")
        else:
            story = args.story
            if story is None and args.steps_per_frame is None and sim.scene is not None:
                story = sim.scene.story_time
            if story:
                dt = sim.engine.params.dt
                paced = movie_pace(story, dt, frames)
                options.steps_per_frame = paced.steps_per_frame
                say(f"galaxyview record: pace: {paced.describe(story, frames, dt)}")
    except GalaxyviewError as exc:
        if writer is not None:
            writer.abort()
        say(f"galaxyview record: error: {exc}")
        return 2
    except KeyboardInterrupt:
        if writer is not None:
            writer.abort()
        say("galaxyview record: interrupted before the first frame; no movie was written")
        return 130
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    try:
        say(f"{sim.name}: {sim.engine.n} particles, {sim.why}; {frames} frames of "
             f"{options.size[0]}x{options.size[1]} at {options.fps} fps -> {writer.path}")
        result = record_simulation(sim, writer, options, look=look,
                                   show_progress=not args.no_progress)
    except KeyboardInterrupt:
        writer.abort()
        say("galaxyview record: interrupted before the first frame or while finishing the "
             "movie; no movie was written")
        return 130
    except GalaxyviewError as exc:
        writer.abort()
        say(f"galaxyview record: error: {exc}")
        return 1
    except BaseException:
        writer.abort()
        raise
    finally:
        sim.close()
    return _report(result)


def _report(result) -> int:
    if result.frames == 0:
        why = "interrupted" if result.interrupted else f"failed: {result.failure}"
        say(f"galaxyview record: {why} before the first frame; no movie was written")
        return 130 if result.interrupted else 1
    summary = (f"{result.path}: {result.frames} frames in {result.wall_s:.1f} s "
               f"({result.fps:.1f} frames/s end to end)")
    if result.interrupted:
        say(f"galaxyview record: interrupted; finished the movie with the {result.frames} of "
             f"{result.requested} frames made so far. {summary}")
        return 130
    if result.failure:
        say(f"galaxyview record: stopped after {result.frames} of {result.requested} frames: "
             f"{result.failure}. The movie holds the frames made so far. {summary}")
        return 1
    print(summary)
    if result.phases_s:
        print("  a frame, ms: " + ", ".join(f"{k.replace('_', ' ')} {1e3 * v / result.frames:.1f}"
                                             for k, v in result.phases_s.items()))
    return 0
