"""`galaxyview bench BENCH`: one subcommand a benchmark (BENCHES), each with its own options.

Adding a bench: a module in bench/ whose `main(args, out)` measures, writes its lines through
out(line) and returns its figures, and one `Bench(...)` line in BENCHES (its options and
`module="name"`). Plain `galaxyview bench` is `bench engine`; the flags that chose
a mode before there were subcommands (`--compare`, `--hermite`, `--hierarchical X`, `--scene` of
a ring scene) still do, with a note naming the subcommand (`legacy`).
"""
from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Callable

from galaxyview.cli import common
from galaxyview.cli.output import print_json, say
from galaxyview.errors import GalaxyviewError

# the options several benches share (each bench gives its own defaults and help)


def _n(p, default, help: str, nargs: str | None = "+") -> None:
    p.add_argument("--n", type=common.count_type, nargs=nargs, default=default, metavar="N",
                   help=help)


def _theta(p, default, help: str = "opening angles", nargs: str | int | None = "+",
           shown: str | None = None) -> None:
    shown = shown or (" ".join(f"{t:g}" for t in default) if isinstance(default, list)
                      else f"{default:g}")
    p.add_argument("--theta", type=common.theta_type, nargs=nargs, default=default,
                   metavar="THETA", help=f"{help} ({shown})")


def _steps(p, default: int = 9, warmup: int | None = 2) -> None:
    p.add_argument("--steps", type=common.count_type, default=default,
                   help=f"timed steps ({default})")
    if warmup is not None:
        p.add_argument("--warmup", type=common.steps_type, default=warmup,
                       help=f"untimed steps first ({warmup})")


def _scene(p, default, help: str) -> None:
    p.add_argument("--scene", default=default, help=help)


def _json(p) -> None:
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (notes and progress on stderr)")


@dataclass(frozen=True)
class Bench:
    name: str
    help: str  # a line of `galaxyview bench --help`
    options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int] | None = None  # (None: module's main, _tool)
    module: str | None = None  # bench/<module>.py, whose main(args, out) it runs
    gpu: bool = False  # the GPU engine only: a clear message where no GPU is usable
    about: str = ""  # more for its --help, after the help line


def _jobs(name: str) -> Callable:
    def run(args) -> int:
        from galaxyview.cli import jobs

        return getattr(jobs, name)(args)
    return run


def _tool(module: str, args) -> int:
    """bench/<module>.py's main(args, out): its lines to stdout (stderr with --json, then its
    figures as JSON)."""
    bench = importlib.import_module(f"galaxyview.bench.{module}")
    json = getattr(args, "json", False)
    figures = bench.main(args, say if json else (lambda line: print(line, flush=True)))
    if json:
        print_json(figures)
    return 0


def _hierarchical(args) -> int:
    from galaxyview.cli.bench_hierarchical import bench_hierarchical

    return bench_hierarchical(args)


def _engine_options(p) -> None:
    _n(p, None, "particle counts (default: 65536 on the CPU, 1M 4M 16M on the GPU)")
    _theta(p, [0.4, 0.75])
    _steps(p)
    _scene(p, None, "a galaxy scene (e.g. mw-andromeda) instead of the Plummer sphere: its "
                    "particles, eps and dt")
    common.add_backend(p)
    _json(p)


def _cpu_options(p) -> None:
    _n(p, [1 << 14, 1 << 16, 1 << 18], "particle counts (16384 65536 262144)")
    _theta(p, [0.5, 0.75])
    _steps(p, warmup=None)
    p.add_argument("--sample", type=common.count_type, default=1024,
                   help="particles the force error is measured on (1024)")
    common.add_threads(p)
    _json(p)


def _hermite_options(p) -> None:
    _n(p, None, "particle counts of the kernel rates (16384 65536 262144 1048576)")
    common.add_device(p)
    _json(p)


def _rings_options(p) -> None:
    _scene(p, "saturn-a-ring", "a ring scene (saturn-a-ring, ring-equilibrium)")
    _n(p, None, "particle counts (default: 100k 1M 4M on the GPU, 4000 on the CPU)")
    _steps(p)
    p.add_argument("--rebound-steps", type=common.whole_number, default=3,
                   help="REBOUND steps timed (3; 0: REBOUND not timed)")
    p.add_argument("--rebound-max", type=common.count_type, default=1 << 20,
                   help="the largest N REBOUND is timed at (1048576)")
    common.add_backend(p, procs=False)
    _json(p)


def _hierarchical_options(p) -> None:
    modes = p.add_subparsers(dest="hierarchical", metavar="MODE", required=True)
    for mode, help in (
            ("solution", "advance --scene to --until with the shared leapfrog at each --dt and "
                         "the hierarchical one at --dt-max with each --eta: wall time, energy "
                         "error"),
            ("mac", "time Bonsai's MAC (--theta) against the acceleration MAC (--alpha) at "
                    "equal median force error"),
            ("equilibrium", "a Plummer sphere's Lagrangian radii over --until")):
        m = modes.add_parser(mode, help=help, description=help[0].upper() + help[1:] + ".")
        m.set_defaults(parser=m)
        _scene(m, None, "scene ('plummer': a Plummer sphere; default: " + (
            "plummer)" if mode == "equilibrium" else "mw-andromeda)"))
        _n(m, None, "particle counts (1048576)")
        if mode == "mac":
            _theta(m, [0.3, 0.4, 0.5, 0.6, 0.75, 0.9])
            m.add_argument("--alpha", type=common.alpha_type, nargs="+", default=None,
                           help="relative MAC tolerances (default: 0.02 to 1e-4)")
            _steps(m)
        else:
            _theta(m, None, "opening angle", nargs=1,
                   shown="the scene's" if mode == "solution" else "0.75")
            m.add_argument("--until", type=common.positive_number, default=None,
                           help="N-body time to advance (default: " + (
                               "10 crossing times)" if mode == "equilibrium" else
                               "1 Gyr in the scene's units)"))
            m.add_argument("--dt-max", type=common.dt_type, default=None,
                           help="the largest individual step (default: " + (
                               "1/16)" if mode == "equilibrium" else "2x the scene's)"))
            m.add_argument("--eta", type=common.eta_type, nargs="+" if mode == "solution" else 1,
                           default=None, help="time-step accuracies (default: " + (
                               "0.02 0.01)" if mode == "solution" else "0.02)"))
        if mode == "solution":
            m.add_argument("--dt", type=common.dt_type, nargs="+", default=None,
                           help="shared steps (default: the scene's, /2, /4)")
            m.add_argument("--refit", type=common.positive_number, default=None,
                           metavar="FRACTION", help="also run each hierarchical case with "
                                                    "tree refits up to this active fraction")
        common.add_device(m)
        _json(m)


def _gpu_engine_options(p) -> None:
    _n(p, [1 << 20], "particle counts (1048576)")
    _theta(p, [0.4, 0.75])
    _steps(p, 7, warmup=None)
    p.add_argument("--cpu-error", action="store_true", help="also the CPU tree's force error")
    p.add_argument("--selfcheck", type=common.count_type, default=None, metavar="N",
                   help="only a short tree and direct run of N particles (for "
                        "compute-sanitizer)")
    _json(p)


def _let_options(p) -> None:
    _n(p, 1 << 22, "particles of the rank's share (4194304)", nargs=None)
    p.add_argument("--hold", type=common.steps_type, nargs="+", default=[0, 4, 8, 16, 64],
                   help="walk blocks held back for the export, a case each (0 4 8 16 64)")
    _theta(p, 0.75, "opening angle", nargs=None)
    _json(p)


def _domains_options(p) -> None:
    _n(p, 1 << 22, "particles (4194304)", nargs=None)
    p.add_argument("--domains", type=common.count_type, nargs="+", default=[2, 4],
                   metavar="K", help="domain counts (2 4)")
    _theta(p, 0.75, "opening angle", nargs=None)
    _scene(p, None, "a scene instead of the Plummer sphere")
    p.add_argument("--repeats", type=common.count_type, default=3, help="timed repeats (3)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the float64 direct sums (minutes at 64M)")
    p.add_argument("--snap", type=common.positive_number, default=None,
                   help="the splitters' snap to coarse cells, a fraction of a part's weight "
                        "(default: the engine's)")
    p.add_argument("--group-parts", type=common.steps_type, default=0, metavar="P",
                   help="walk each domain's LETs again in this many ranges of its groups")
    _json(p)


def _render_options(p) -> None:
    from galaxyview.cli.record import size_type

    _scene(p, "antennae", "the scene of the whole frames (antennae)")
    p.add_argument("--n", type=common.steps_type, default=1 << 20,
                   help="particles for whole frames (1048576; 0: skip them)")
    _theta(p, 0.75, "opening angle", nargs=None)
    p.add_argument("--render-n", type=common.count_type, nargs="*",
                   default=[1_000_000, 4_000_000], metavar="N",
                   help="Plummer spheres rendered alone (1000000 4000000)")
    p.add_argument("--frames", type=common.count_type, default=60, help="frames timed (60)")
    p.add_argument("--size", type=size_type, default=(1920, 1080), metavar="WxH",
                   help="frame size in pixels (1920x1080)")
    p.add_argument("--sweep", action="store_true",
                   help="also time vertex order, light buffer scale and sprite size")
    p.add_argument("--png", help="save a frame of the scene here")
    p.add_argument("--png-steps", type=common.steps_type, default=0,
                   help="steps to run (in batches, untimed) before the --png frame")
    _json(p)


def _movie_options(p) -> None:
    from galaxyview.cli.record import size_type
    from galaxyview.movie.encoder import PRESETS

    p.add_argument("scene", help="a scene name or .toml file")
    _n(p, None, "particle count (default: the scene's for the engine)", nargs=None)
    p.add_argument("--frames", type=common.count_type, default=300, help="frames (300)")
    p.add_argument("--size", type=size_type, default=(1920, 1080), metavar="WxH",
                   help="frame size in pixels (1920x1080)")
    _theta(p, 0.75, "opening angle", nargs=None)
    p.add_argument("--presets", choices=PRESETS, nargs="+", default=["veryfast", "fast", "medium"],
                   help="x264 presets the encoder is timed with (veryfast fast medium)")
    p.add_argument("--record-presets", choices=PRESETS, nargs="+", default=["fast"],
                   help="presets of the whole recordings (fast)")
    p.add_argument("--out", default=".", metavar="DIR",
                   help="folder of the recordings and bench.json (.)")
    common.add_backend(p, procs=False)
    _json(p)


def _mpi_wait_options(p) -> None:
    p.add_argument("--loops", type=common.count_type, default=400,
                   help="allreduces a case (400)")
    p.set_defaults(every_rank=True)  # under mpirun every rank runs it (not rank 0 alone)


BENCHES = (
    Bench("engine", "the engine's step phases on a Plummer sphere or a galaxy scene, next to "
                    "Bonsai (plain 'galaxyview bench')", _engine_options,
          _jobs("cmd_bench_engine"), about="Plummer: eps 0.05, dt 1/16; the tree rebuilt every "
          "step; medians after warm-up; walk TFLOP/s by Bonsai's count (23 per p-p, 65 per p-c)."),
    Bench("cpu", "the CPU engines (cpu, reference) and pytreegrav at equal median force error",
          _cpu_options, _jobs("cmd_bench_cpu")),
    Bench("hermite", "the GPU Hermite: force kernel rate by active-block size, and a 64k Plummer "
                     "advanced one N-body time unit", _hermite_options,
          _jobs("cmd_bench_hermite"), gpu=True),
    Bench("rings", "a ring scene's step by phase (gravity with ghost boxes, collision search "
                   "and resolve, integrate), and REBOUND's on the same patch",
          _rings_options, _jobs("cmd_bench_rings")),
    Bench("hierarchical", "the GPU's individual time steps: solution, mac or equilibrium",
          _hierarchical_options, _hierarchical, gpu=True),
    Bench("gpu-engine", "the GPU engine for its developers: per-phase CUDA-event medians, "
                        "force error, next to Bonsai", _gpu_engine_options, module="gpu_engine",
          gpu=True),
    Bench("let", "a parallel rank's LET export beside its walk, on one GPU", _let_options,
          module="let_beside", gpu=True),
    Bench("domains", "the walks of K domains, one at a time on one GPU", _domains_options,
          module="domain_walks", gpu=True),
    Bench("mpi-wait", "how late a rank learns that a collective is complete (under mpirun -n 2)",
          _mpi_wait_options, module="mpi_wait"),
    Bench("render", "the renderer, headless: rendering alone on Plummer spheres, whole frames "
                    "on a scene", _render_options, module="render", gpu=True),
    Bench("movie", "recording: each stage alone, then whole recordings", _movie_options,
          module="movie"),
)
NAMES = tuple(b.name for b in BENCHES)


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks: the engines, the renderer, recording",
                       description="Benchmarks, one subcommand each ('galaxyview bench BENCH "
                                   "--help' for its options). Plain 'galaxyview bench' is "
                                   "'galaxyview bench engine'.")
    benches = p.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for bench in BENCHES:
        b = benches.add_parser(bench.name, help=bench.help,
                               description=" ".join(filter(None, [
                                   bench.help[0].upper() + bench.help[1:] + ".", bench.about])))
        bench.options(b)
        b.set_defaults(bench_entry=bench, parser=b)


def run_bench(args) -> int:
    bench = args.bench_entry
    if bench.gpu:
        from galaxyview.engines import gpu_unavailable_reason

        reason = gpu_unavailable_reason(getattr(args, "device", 0))
        if reason:
            what = " ".join([bench.name, *([args.hierarchical] if bench.name == "hierarchical"
                                           else [])])
            raise GalaxyviewError(f"bench {what} needs a CUDA GPU: {reason}")
    return bench.run(args) if bench.run else _tool(bench.module, args)


# the flags that chose a mode before there were subcommands: flag -> subcommand, the backends
# it took
_MODES = {"--compare": ("cpu", ("auto", "cpu")), "--hermite": ("hermite", ("auto", "gpu")),
          "--hierarchical": ("hierarchical", ("auto", "gpu"))}


def legacy(argv: list[str]) -> list[str]:
    """`bench ...` without a subcommand as `bench engine ...`, or as the subcommand an old
    mode flag chose, with a note naming it; argv unchanged when it names a subcommand."""
    if argv[:1] != ["bench"] or (len(argv) > 1 and argv[1] in (*NAMES, "-h", "--help")):
        return argv
    rest = [part for arg in argv[1:]
            for part in (arg.split("=", 1) if arg.split("=", 1)[0] in (*_MODES, "--backend",
                                                                       "--scene") else [arg])]
    flags = [f for f in _MODES if f in rest]
    if len(flags) > 1:
        raise GalaxyviewError(f"bench {' and '.join(flags)}: one bench at a time (galaxyview "
                              "bench --help lists them)")
    head = ["engine"]
    if flags:
        flag = flags[0]
        at = rest.index(flag)
        head = [_MODES[flag][0]]
        if flag == "--hierarchical":
            if at + 1 >= len(rest):
                raise GalaxyviewError("bench --hierarchical: name solution, mac or equilibrium")
            head.append(rest.pop(at + 1))
        rest.pop(at)
        if "--backend" in rest[:-1]:  # the subcommand takes no --backend: check it, drop it
            b = rest.index("--backend")
            backend = rest[b + 1]
            if backend not in _MODES[flag][1]:
                what = " ".join([flag, *head[1:]])
                engines = "the CPU engines: use --backend cpu" if flag == "--compare" else \
                    f"the GPU engine only; leave out --backend {backend}"
                raise GalaxyviewError(f"bench {what} times {engines} (galaxyview bench "
                                      f"{' '.join(head)})")
            del rest[b:b + 2]
    elif "--scene" in rest[:-1]:
        from galaxyview.model.scene import load_scene

        try:
            if load_scene(rest[rest.index("--scene") + 1]).model == "ring":
                head = ["rings"]
        except GalaxyviewError:  # (bench engine says what is wrong with it)
            pass
    new = ["bench", *head, *rest]
    if head != ["engine"]:
        say(f"galaxyview: note: this is 'galaxyview {' '.join(new)}' (galaxyview bench --help "
            "lists the benches)")
    return new
