"""`galaxyview` command line: the viewer by default, and run, accuracy, bench, scenes, record."""
from __future__ import annotations

import argparse
import os
import signal
import sys

from galaxyview.version import __version__
from galaxyview.errors import GalaxyviewError
from galaxyview.interrupt import (NOTE_ENV, STOP_SIGNALS, hold, stopped_by, take_stop_signals,
                                  what_stopped)

COMMANDS = ("run", "accuracy", "bench", "scenes", "record", "view", "show")


def build_parser() -> argparse.ArgumentParser:
    from galaxyview.cli import common

    parser = argparse.ArgumentParser(
        prog="galaxyview",
        description="Real-time galaxy collisions on a GPU Barnes-Hut tree code. With no command "
                    "(or 'view'), opens the viewer: galaxyview [SCENE] [--backend B] [--n N] ...",
    )
    parser.add_argument("--version", action="version", version=f"galaxyview {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    from galaxyview.cli import view

    p = sub.add_parser("view", help="open the viewer window (the default command)",
                       description="Open the viewer window on a scene or snapshot.")
    view.add_view_arguments(p)
    view.add_show_parser(sub)

    from galaxyview.cli import run

    run.add_run_parser(sub)

    p = sub.add_parser("accuracy", help="tree force errors against direct summation",
                       description="Force-error percentiles of the tree code against float64 "
                                   "direct summation, and interactions per particle, per theta.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--plummer", type=common.count_type, metavar="N",
                     help="a Plummer sphere of N particles (default 16384)")
    src.add_argument("scene", nargs="?", metavar="SCENE|SNAPSHOT",
                     help="a scene name, a .toml file, or a snapshot or archive")
    p.add_argument("--theta", type=common.theta_type, nargs="+", default=[0.3, 0.5, 0.75])
    p.add_argument("--eps", type=common.eps_type, default=None,
                   help="softening (default: 0.05, or the scene's)")
    p.add_argument("--n", type=common.count_type, help="particle count for a scene")
    p.add_argument("--sample", type=common.count_type, default=None,
                   help="compare on this many random particles (default: all up to 32768)")
    common.add_backend(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")

    from galaxyview.cli import bench

    bench.add_bench_parser(sub)

    sub.add_parser("scenes", help="list the shipped scenes",
                   description="List the shipped scenes, one line each.")

    from galaxyview.cli import record

    record.add_record_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line's exit code. As the program (argv None), stops that come once it is
    done are ignored (it only exits); otherwise the signal handlers are restored."""
    taken = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    if NOTE_ENV in os.environ:  # a process of a job that the --procs launcher started
        hold(signal.SIGUSR1)  # (before the imports: the launcher's stop may come at once)
    else:
        take_stop_signals()  # first: a stop while starting ends it cleanly too
    code = None
    try:
        code = _main(argv)
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in taken.items():
            signal.signal(sig, signal.SIG_IGN if argv is None else handler)
    if code is None:
        print(f"galaxyview: interrupted ({what_stopped()})", file=sys.stderr)
        code = _exit_code(130)
    if argv is None and code in (129, 130, 143) and not _in_mpi_job():
        # CPython remembers a KeyboardInterrupt that left a nested evaluation (import-time
        # code) even when caught, and would end the process by SIGINT instead of this code
        # (not in an MPI job: its processes finalize MPI at exit)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _in_mpi_job() -> bool:
    from galaxyview.engines.parallel.mpi import world_size_from_env

    return NOTE_ENV in os.environ or world_size_from_env() > 1


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    from galaxyview.cli.output import show_library_warnings  # (after the stop signals: numpy)

    show_library_warnings()
    # no command: the viewer, with the same arguments as 'view'
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["view", *argv]
    parser = build_parser()
    try:
        from galaxyview.cli import bench

        argv = bench.legacy(argv)  # (bench without a subcommand)
    except GalaxyviewError as exc:
        print(f"galaxyview: error: {exc}", file=sys.stderr)
        return 2
    args, extra = parser.parse_known_args(argv)
    if extra:  # (named by the innermost command, e.g. 'galaxyview bench cpu')
        getattr(args, "parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        from galaxyview.cli import processes
        from galaxyview.engines import parallel

        k = processes.wanted(args)
        if parallel.launched() and getattr(args, "every_rank", False):
            return _exit_code(_command(args))  # (bench mpi-wait: collectives of its own)
        if parallel.launched():  # under mpirun: rank 0 runs the command, the others serve
            processes.check_launched(k)
            return processes.as_rank(lambda: _command(args),
                                     getattr(args, "backend", "cpu") not in ("cpu", "reference"))
        if k > 1:
            n = getattr(args, "n", None)  # (bench takes several)
            return _exit_code(processes.spawn(argv, k, args.backend == "gpu",
                                              n if isinstance(n, int) else None,
                                              processes.flag(args, k)))
        return _exit_code(_command(args))
    except GalaxyviewError as exc:
        print(f"galaxyview: error: {exc}", file=sys.stderr)
        return 2


def _exit_code(code: int) -> int:
    """130 (Ctrl-C) becomes 128 + the signal taken as Ctrl-C (SIGTERM 143, SIGHUP 129)."""
    sig = stopped_by()
    if code != 130 or sig is None:
        return code
    print(f"galaxyview: stopped by {what_stopped()}, as by Ctrl-C", file=sys.stderr)
    return 128 + sig


def _command(args) -> int:
    try:
        if getattr(args, "threads", None) is not None:  # commands with --backend take --threads
            from galaxyview.engines import set_threads

            set_threads(args.threads)
        if args.command == "view":
            from galaxyview.cli import view

            return view.run_view(args)
        if args.command == "show":
            from galaxyview.cli import view

            return view.run_show(args)
        if args.command == "record":
            from galaxyview.cli import record

            return record.run_record(args)
        from galaxyview.cli import bench, jobs, run

        handlers = {"run": run.cmd_run, "accuracy": jobs.cmd_accuracy, "bench": bench.run_bench,
                    "scenes": jobs.cmd_scenes}
        return handlers[args.command](args)
    except GalaxyviewError as exc:
        print(f"galaxyview: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print("galaxyview: error: out of memory; try a smaller --n", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"galaxyview: interrupted ({what_stopped()})", file=sys.stderr)
        return 130
