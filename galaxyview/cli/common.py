"""Argument types and options shared by several commands."""
from __future__ import annotations

import argparse

from galaxyview.engines import BACKENDS, module_names
from galaxyview.errors import ParameterError
from galaxyview.model.params import (check_alpha, check_dt, check_eps, check_eta, check_theta,
                                     float32_problem, integer_problem)


def _checked(check):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        try:
            return check(value)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = check.__name__.removeprefix("check_")
    return parse


theta_type = _checked(check_theta)
dt_type = _checked(check_dt)
eps_type = _checked(check_eps)
eta_type = _checked(check_eta)
alpha_type = _checked(check_alpha)


def whole_number(text: str) -> int:
    """A whole number, at most 2^53 in size (the rule of every integer option and value)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if integer_problem(value):
        raise argparse.ArgumentTypeError(f"{text} {integer_problem(value)}")
    return value


def count_type(text: str) -> int:
    """A count >= 1: 100000, or written as 1e5."""
    try:
        int(text)
        value = whole_number(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not number.is_integer():
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if integer_problem(number):
            raise argparse.ArgumentTypeError(f"{text} {integer_problem(number)}") from None
        value = int(number)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def steps_type(text: str) -> int:
    """A count >= 0."""
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    if float32_problem(value):
        raise argparse.ArgumentTypeError(f"{text} {float32_problem(value)}")
    return value


def device_type(text: str) -> int:
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a CUDA device number is >= 0, got {value}")
    return value


def add_backend(parser: argparse.ArgumentParser, procs: bool = True) -> None:
    """--backend, --threads, --device and (procs) --procs, --gpus."""
    parser.add_argument("--backend", choices=BACKENDS, default="auto",
                        help="engine: gpu (CUDA via pycuda), cpu (compiled with numba), "
                             "reference (numpy, the test oracle), or auto: the GPU when pycuda "
                             "and a CUDA device are usable, else cpu (default: auto)")
    add_threads(parser)
    add_device(parser)
    if procs:
        add_procs(parser)


def add_threads(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=count_type, default=None, metavar="N",
                        help="threads of the CPU engines (default: $GALAXYVIEW_THREADS, else "
                             "every CPU)")


def add_device(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", type=device_type, default=0, metavar="N",
                        help="CUDA device number of the GPU engine, as nvidia-smi lists them "
                             "(default: 0)")


def add_procs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--procs", type=count_type, default=None, metavar="K",
                        help="one simulation over K processes of this host (MPI: mpirun is "
                             "started for you; across hosts run mpirun yourself, see "
                             "docs/parallel.md)")
    parser.add_argument("--gpus", type=count_type, default=None, metavar="K",
                        help="one simulation over K GPUs of this host, a process each "
                             "(--backend gpu --procs K)")


def add_physics(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--theta", type=theta_type, help="opening angle, 0 < theta <= 1.5 "
                        "(default: the scene's)")
    parser.add_argument("--dt", type=dt_type, help="time step, N-body units (default: the scene's)")
    parser.add_argument("--eps", type=eps_type, help="Plummer softening, N-body units "
                        "(default: the scene's)")
    parser.add_argument("--n", type=count_type, help="particle count (scenes rescale; default: "
                        "the scene's default for the engine in use)")
    for what in ("integrator", "boundary", "collision"):
        parser.add_argument(f"--{what}", choices=module_names(what),
                            help=f"{what} module (default: the scene's)")


def engine_options(args: argparse.Namespace) -> dict:
    """The keyword arguments of open_simulation that add_backend and add_physics parsed."""
    return {"device": args.device, "integrator": args.integrator, "boundary": args.boundary,
            "collision": args.collision}


def degrees_type(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of degrees") from None
    if not -360 <= value <= 360:
        raise argparse.ArgumentTypeError(f"{text} degrees is out of range")
    return value


def add_projection(p, movies: bool = False) -> None:
    """--projection, --fov, --tilt, --eye-sep (render/projections): record, the viewer, show."""
    from galaxyview.render.projections import FOV_RANGE, PROJECTIONS

    p.add_argument("--projection", choices=PROJECTIONS, default="perspective",
                   help="perspective: the viewer's camera; fisheye: a dome master (zenith at the "
                        "centre, the camera's target at the front, the bottom); equirect: 360; "
                        "stereo-sbs, stereo-tb: stereo pairs side by side or left eye on top; "
                        "ods: 360 stereo, left eye on top"
                        + (". 360 movies carry the metadata players and YouTube read"
                           if movies else "") + " (perspective)")
    p.add_argument("--fov", type=degrees_type, default=180.0, metavar="DEG",
                   help=f"fisheye: field of view, {FOV_RANGE[0]:g}..{FOV_RANGE[1]:g} degrees (180)")
    p.add_argument("--tilt", type=degrees_type, default=0.0, metavar="DEG",
                   help="fisheye: the dome's tilt, degrees; the zenith turns from the camera's "
                        "up towards its target (90 puts the target at the centre) (0)")
    p.add_argument("--eye-sep", type=positive_number, metavar="D",
                   help="stereo and ods: the distance between the eyes in scene units (default: "
                        "a thirtieth of the camera's distance to its target)")


def projection_of(args):
    """The checked Projection of add_projection's arguments (ParameterError if out of range)."""
    from galaxyview.render.projections import Projection

    return Projection(args.projection, args.fov, args.tilt, args.eye_sep).validate()
