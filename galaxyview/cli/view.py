"""`galaxyview [SCENE] ...`: the viewer's arguments (the window itself is galaxyview.app)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from galaxyview.cli import common
from galaxyview.errors import GalaxyviewError


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="SCENE",
                        help="a shipped scene's name, a .toml scene file or a Tipsy snapshot "
                             "(default: antennae, or the first shipped scene)")
    common.add_backend(parser)
    common.add_physics(parser)
    parser.add_argument("--steps-per-frame", type=common.count_type, default=1, metavar="M",
                        help="simulation steps per drawn frame (1)")
    parser.add_argument("--screenshot", metavar="FILE.png",
                        help="run --frames frames, save the canvas as a PNG and exit")
    parser.add_argument("--frames", type=int, default=10, metavar="K",
                        help="frames to run before --screenshot is taken (10; 0: the initial "
                             "state)")


def display_problem() -> str | None:
    """None when Qt can open a window here; otherwise what to do."""
    if sys.platform != "linux" or os.environ.get("QT_QPA_PLATFORM", "").split(":")[0] in (
            "offscreen", "minimal", "vnc", "eglfs", "linuxfb"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return ("no display: set DISPLAY to an X server, or for a picture without one use "
            "--screenshot under xvfb-run (xvfb-run galaxyview SCENE --screenshot out.png "
            "--frames 10)")


def check_screenshot(args) -> None:
    if args.frames < 0:
        raise GalaxyviewError(f"--frames must be >= 0, got {args.frames}")
    if args.screenshot is None:
        return
    path = Path(args.screenshot)
    if path.suffix.lower() != ".png":
        raise GalaxyviewError(f"--screenshot {path}: give a file name ending in .png")
    if not path.parent.is_dir():
        raise GalaxyviewError(f"--screenshot {path}: the folder {path.parent} does not exist; "
                              "create it first")


def run_view(args) -> int:
    """Open the viewer; returns the exit code (2 for bad input or no display)."""
    try:
        check_screenshot(args)
        problem = display_problem()
        if problem:
            raise GalaxyviewError(problem)
        from galaxyview.app.main import run_window
        from galaxyview.app.window import ViewOptions

        options = ViewOptions(args.source, args.backend, args.n, args.theta, args.dt, args.eps,
                              engine=common.engine_options(args))
        return run_window(options, args.screenshot, args.frames, args.steps_per_frame)
    except GalaxyviewError as exc:
        print(f"galaxyview: error: {exc}", file=sys.stderr)
        return 2
