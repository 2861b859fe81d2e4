"""`galaxyview [SCENE] ...`: the viewer's arguments (the window itself is galaxyview.app)."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

from galaxyview.cli import common
from galaxyview.errors import GalaxyviewError
from galaxyview.files import check_output_path


def add_audience(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--audience-screen", type=int, metavar="N",
                        help="also show the picture full screen on screen N (0 the first; a "
                             "projector is usually 1), the window staying with the operator")


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="SCENE",
                        help="a shipped scene's name, a .toml scene file, a snapshot or an "
                             "archive (default: the scene shown last, else antennae)")
    common.add_backend(parser)
    common.add_physics(parser)
    parser.add_argument("--steps-per-frame", type=common.count_type, default=None, metavar="M",
                        help="simulation steps per drawn frame (default: on the CPU engine the "
                             "scene's pace, so that its story plays in about a minute; else 1)")
    common.add_projection(parser)
    add_audience(parser)
    parser.add_argument("--screenshot", metavar="FILE.png",
                        help="run --frames frames, save the canvas as a PNG and exit")
    parser.add_argument("--overwrite", action="store_true",
                        help="let --screenshot replace an existing file")
    parser.add_argument("--frames", type=common.whole_number, default=10, metavar="K",
                        help="frames to run before --screenshot is taken (10; 0: the initial "
                             "state)")


def add_show_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "show", help="full-screen unattended show of a playlist of scenes",
        description="Loop a playlist of scenes full screen, unattended: camera programmes, "
                    "captions, cross-fades. Space holds the show, Right or Page Down skips a "
                    "scene, Left or Page Up goes back one, F11 toggles full screen; any other "
                    "key or a mouse move hands you the controls; the show goes on after the "
                    "playlist's idle time. Format: docs/viewer.md.")
    p.add_argument("playlist", nargs="?", metavar="PLAYLIST",
                   help="a .toml playlist, or a shipped one's name (default: the shipped "
                        "default playlist)")
    common.add_backend(p)
    common.add_projection(p)
    p.add_argument("--windowed", action="store_true", help="in a window, not full screen")
    p.add_argument("--items", type=common.count_type, default=0, metavar="K",
                   help="stop after K scenes (default: loop until closed)")
    p.add_argument("--text-scale", type=float, metavar="S",
                   help="size of the captions and the HUD, 1 the default; 2 or more reads well "
                        "on a projector (1)")
    p.add_argument("--labels", action="store_true",
                   help="the galaxies' names at their centres (the playlist's labels)")
    p.add_argument("--scale-bar", action="store_true",
                   help="a scale bar in the scene's length unit, perspective only (the "
                        "playlist's scale_bar)")
    add_audience(p)
    return p


QT_MISSING = ("the viewer needs Qt (PyQt6), which is not installed: "
              "pip install 'galaxyview[viewer]' (headless: galaxyview run, galaxyview record)")


def qt_problem() -> str | None:
    """None when PyQt6 loads; otherwise one line naming the install command or the failure."""
    if importlib.util.find_spec("PyQt6") is None:
        return QT_MISSING
    try:
        importlib.import_module("PyQt6.QtWidgets")
    except ImportError as exc:
        return f"the viewer's Qt (PyQt6) does not load: {exc}"
    return None


def _display_checked() -> None:
    problem = qt_problem()
    if problem:
        raise GalaxyviewError(problem)
    from galaxyview.app.platform import display_problem

    problem = display_problem()
    if problem:
        raise GalaxyviewError(problem)


def run_show(args) -> int:
    """`galaxyview show`; exit codes as the viewer's, 1 when no scene could be opened."""
    try:
        from galaxyview.model.playlist import load_playlist

        playlist = load_playlist(args.playlist)
        playlist = replace(playlist, labels=playlist.labels or args.labels,
                           scale_bar=playlist.scale_bar or args.scale_bar)
        _display_checked()
        from galaxyview.app.main import run_show as show
        from galaxyview.app.window import ViewOptions

        options = ViewOptions(backend=args.backend, engine={"device": args.device},
                              projection=common.projection_of(args))
        if args.text_scale is not None:
            from galaxyview.app.hud import TEXT_SCALES

            lo, hi = TEXT_SCALES
            if not lo <= args.text_scale <= hi:
                raise GalaxyviewError(f"--text-scale must be {lo:g}..{hi:g}, got "
                                      f"{args.text_scale:g}")
        return show(options, playlist, fullscreen=not args.windowed, items=args.items,
                    text_scale=args.text_scale, audience=args.audience_screen)
    except GalaxyviewError as exc:
        print(f"galaxyview show: error: {exc}", file=sys.stderr)
        return 2


def check_screenshot(args) -> None:
    if args.frames < 0:
        raise GalaxyviewError(f"--frames must be >= 0, got {args.frames}")
    if args.screenshot is None:
        return
    path = Path(args.screenshot)
    if path.suffix.lower() != ".png":
        raise GalaxyviewError(f"--screenshot {path}: give a file name ending in .png")
    try:
        check_output_path(path, args.overwrite)
    except GalaxyviewError as exc:
        raise GalaxyviewError(f"--screenshot {exc}") from None


def run_view(args) -> int:
    """Open the viewer; returns the exit code (2 for bad input, no display or no OpenGL; 130
    or 143 when closed by Ctrl-C or SIGTERM)."""
    try:
        check_screenshot(args)
        _display_checked()
        from galaxyview.app.main import run_window
        from galaxyview.app.window import ViewOptions

        options = ViewOptions(args.source, args.backend, args.n, args.theta, args.dt, args.eps,
                              engine=common.engine_options(args),
                              steps_per_frame=args.steps_per_frame,
                              projection=common.projection_of(args))
        return run_window(options, args.screenshot, args.frames, audience=args.audience_screen)
    except GalaxyviewError as exc:
        print(f"galaxyview: error: {exc}", file=sys.stderr)
        return 2
