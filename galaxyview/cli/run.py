"""`galaxyview run`: arguments, the archive and output files, the report.

Exit codes: 0 done; 1 the run failed part way (its last good state written, the message says
where); 2 bad input (nothing was run); 130 interrupted by Ctrl-C (the same).
"""
from __future__ import annotations

import datetime
import os
import sys
import tempfile
from pathlib import Path

from galaxyview.cli import common
from galaxyview.cli.output import making_bar, print_json, progress_bar, say
from galaxyview.errors import GalaxyviewError
from galaxyview.files import check_output_path, safe_name
from galaxyview.interrupt import shielded, what_stopped
from galaxyview.snapshots import registry
from galaxyview.snapshots.registry import writable

ENERGY_WARN = 0.01  # a relative energy error above this gets a note
RESCUE_AFTER_S = 60.0  # a run without --archive or --out keeps its state when it ran this long


def add_run_parser(sub) -> None:
    p = sub.add_parser("run", help="evolve a scene or snapshot headless",
                       description="Evolve a scene, snapshot or archive without a window and "
                                   "report the energy error, momentum drift and timing. Ctrl-C "
                                   "stops after the current step and keeps the state.")
    p.add_argument("source", metavar="SCENE|SNAPSHOT",
                   help="a shipped scene's name, a .toml scene file, or a snapshot or archive "
                        "(galaxyview HDF5, Tipsy, Gadget, ...; see docs/snapshot-format.md)")
    p.add_argument("--steps", type=common.count_type, default=100, help="steps to take (100)")
    p.add_argument("--index", type=common.whole_number, metavar="K",
                   help="start from snapshot K of an archive (default: its last; negative "
                        "counts from the end)")
    common.add_backend(p)
    common.add_physics(p)
    writers = writable()
    by_name = registry.save_suffixes()
    p.add_argument("--out", metavar="FILE", help="write the final state, in the format its "
                   f"name gives: {by_name}")
    p.add_argument("--format", choices=[f.choice for f in writers],
                   help="how --out is written (default: by its name): " + "; ".join(
                       f"{f.choice} ({', '.join(f.suffixes)}): {f.save_note or f.title}"
                       for f in writers))
    p.add_argument("--archive", metavar="FILE.h5",
                   help="store the run's states in this archive (first, every interval, last)")
    p.add_argument("--every", type=common.count_type, metavar="K",
                   help="archive every K steps (default: every steps/20 when no other "
                        "interval is given)")
    p.add_argument("--every-time", type=common.positive_number, metavar="T",
                   help="archive every T of simulated time (N-body units)")
    p.add_argument("--every-wall", type=common.positive_number, metavar="S",
                   help="archive every S seconds of wall time")
    p.add_argument("--overwrite", action="store_true", help="replace --out or --archive")
    p.add_argument("--json", action="store_true", help="print one JSON summary object")


def _ask_overwrite(paths: list[Path], overwrite: bool) -> bool:
    existing = [p for p in paths if p.is_file()]
    if existing and not overwrite and sys.stdin is not None and sys.stdin.isatty():
        names = " and ".join(map(str, existing))
        try:
            answer = input(f"{names} exist(s). Overwrite? [y/N] ")
        except EOFError:  # Ctrl-D: no answer is a no
            print(file=sys.stderr)
            say("galaxyview run: no answer (end of input): the existing file is kept")
            return False
        return answer.strip().lower() in ("y", "yes")
    return overwrite


def check_out(out: str | None, overwrite: bool, format: str | None = None) -> bool:
    """Fail before any work if --out cannot be written (in `format`); ask before replacing a
    file. Returns the overwrite decision."""
    if out is None:
        if format is not None:
            raise GalaxyviewError(f"--format {format} says how --out is written; give --out")
        return overwrite
    from galaxyview.simulation import save_kind

    path = Path(out)
    companions = save_kind(out, format).companions(path)
    overwrite = _ask_overwrite([path, *companions], overwrite)
    for aux in companions:
        check_output_path(aux, overwrite)
    _check_writable("--out", out, overwrite)
    return overwrite


def _check_writable(option: str, path: str, overwrite: bool) -> None:
    """check_output_path, and the folder writable, for the file of `option`."""
    folder = check_output_path(path, overwrite).parent
    if not os.access(folder, os.W_OK):
        raise GalaxyviewError(f"{option} {path}: folder {folder} is not writable")


def cmd_run(args) -> int:
    from galaxyview.jobs.checkpoint import Checkpoints, Interval, preflight
    from galaxyview.jobs.run import run
    from galaxyview.simulation import open_simulation, save_kind
    from galaxyview.snapshots import archive

    overwrite = check_out(args.out, args.overwrite, args.format)
    interval = Interval(args.every, args.every_time, args.every_wall)
    archive_overwrite = args.overwrite
    if args.archive:
        _check_archive(args.archive, args.out)
        archive_overwrite = _ask_overwrite([Path(args.archive)], args.overwrite)
        _check_writable("--archive", args.archive, archive_overwrite)
    elif any(v is not None for v in (args.every, args.every_time, args.every_wall)):
        raise GalaxyviewError("--every, --every-time and --every-wall need --archive FILE.h5")
    try:
        with making_bar() as made:
            sim = open_simulation(args.source, args.backend, args.n, args.theta, args.dt,
                                  args.eps, index=args.index, playback=False, progress=made,
                                  **common.engine_options(args))
    except KeyboardInterrupt:
        say(f"galaxyview run: interrupted ({what_stopped()}) while loading; nothing to save")
        raise
    why = args.out and save_kind(args.out, args.format).cannot_write(sim.units)
    if why:  # before the run, not after it
        sim.close()
        raise GalaxyviewError(f"--out {args.out} ({save_kind(args.out, args.format).choice}): "
                              f"{sim.name} {why}")
    checkpoints = None
    try:
        if args.archive:
            if interval == Interval():
                interval = Interval(steps=max(1, args.steps // 20))
            count = interval.expected(args.steps, sim.engine.params.dt)
            preflight(args.archive, sim.engine.n, count)
            checkpoints = Checkpoints(archive.ArchiveWriter(args.archive, sim.run_info(),
                                                            archive_overwrite), interval)
        if args.out:
            preflight(args.out, sim.engine.n, 1, "--out")
        say(f"{sim.name}: {sim.engine.n} particles, {sim.why}")
        with progress_bar(args.steps, sim.name) as update:
            result = run(sim.engine, sim.name, args.steps, update,
                         sim.units.time_myr if sim.units else None, checkpoints)
        if result.stopped:
            with shielded():  # (a further stop: after the state is kept)
                result.saved = _keep_last_state(sim, args, checkpoints, overwrite, result)
        else:
            if checkpoints is not None:
                checkpoints.finish(sim.engine)
            if args.out:
                try:
                    sim.save(args.out, overwrite=overwrite, format=args.format)
                    result.out = args.out
                except GalaxyviewError as exc:  # (a full disk): the state goes elsewhere
                    result.stopped = f"writing --out failed ({exc})"
                    result.saved = _rescue(sim)
        if checkpoints is not None:
            result.archive, result.snapshots = str(checkpoints.path), checkpoints.count
    except KeyboardInterrupt:  # a stop outside the run's steps, or a second one
        if checkpoints is not None and checkpoints.count:
            say(f"galaxyview run: interrupted ({what_stopped()}); {checkpoints.path} keeps its "
                f"{checkpoints.count} snapshots (to t = {checkpoints.last_time:g})")
        else:
            say(f"galaxyview run: interrupted ({what_stopped()}) before the first step; "
                "nothing was saved")
        raise
    finally:
        if checkpoints is not None:
            checkpoints.close()
        sim.close()
    if args.json:
        print_json(result.as_dict())
    else:
        _report(result)
    if result.stopped:
        return 130 if result.stopped.startswith("interrupted") else 1
    return 0


def _keep_last_state(sim, args, checkpoints, overwrite: bool, result) -> str:
    """After a stop: the engine's last good state to the archive, else --out, else (after a
    long run) a rescue file; returns a sentence saying where it went."""
    try:
        exact = sim.engine.exact_state()
    except GalaxyviewError as exc:
        if checkpoints is not None and checkpoints.count:
            return (f"the engine's state is not usable ({exc}); the last good one is snapshot "
                    f"{checkpoints.count - 1} of {checkpoints.path} (t = "
                    f"{checkpoints.last_time:g})")
        return f"the engine's state is not usable ({exc}); nothing could be saved"
    try:
        if checkpoints is not None:
            if exact.steps != checkpoints.last_step:
                checkpoints.writer.append(exact)
            return (f"the last good state (t = {exact.time:g}, step {exact.steps}) is snapshot "
                    f"{checkpoints.count - 1} of {checkpoints.path}")
    except GalaxyviewError:  # (a full disk: the stop's own reason says why)
        if not checkpoints.count:  # its first snapshot failed: the run never started
            return "nothing was saved"
        return (f"{checkpoints.path} keeps its {checkpoints.count} snapshots (to t = "
                f"{checkpoints.last_time:g}); {_rescue(sim, exact)}")
    if args.out:
        try:
            sim.save(args.out, overwrite=overwrite, format=args.format)
            result.out = args.out
            return f"the last good state (t = {exact.time:g}) was written to {args.out}"
        except GalaxyviewError as exc:
            return f"writing {args.out} failed ({exc}); {_rescue(sim, exact)}"
    if result.wall_s < RESCUE_AFTER_S:
        return "nothing was saved (a short run; --archive FILE.h5 keeps the states)"
    return _rescue(sim, exact)


def _rescue(sim, exact=None) -> str:
    """The state to a rescue file in the working folder, else in the temporary folder;
    returns a sentence saying where it went."""
    from galaxyview.snapshots import archive

    failures = []
    try:
        exact = exact if exact is not None else sim.engine.exact_state()
    except GalaxyviewError as exc:
        return f"the engine's state is not usable ({exc}); nothing could be saved"
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for folder in (Path.cwd(), Path(tempfile.gettempdir())):
        path = folder / f"{safe_name(sim.name)}-rescue-{stamp}.h5"
        try:
            archive.save_exact(path, exact, sim.run_info())
            return f"the last good state (t = {exact.time:g}) was written to {path}"
        except (GalaxyviewError, OSError) as exc:
            failures.append(f"{folder}: {exc}")
    return "saving the last good state failed: " + "; ".join(failures)


def _check_archive(path: str, out: str | None) -> None:
    """--archive is an HDF5 archive, another file than --out."""
    suffixes = registry.FORMATS.get("galaxyview").suffixes  # the archive's own format
    if Path(path).suffix.lower() not in suffixes:
        raise GalaxyviewError(f"--archive {path}: an archive is an HDF5 file; give a name "
                              f"ending in {', '.join(suffixes)}")
    if out is not None and Path(out).resolve() == Path(path).resolve():
        raise GalaxyviewError(f"--out and --archive are the same file ({path}); the archive "
                              "keeps the last state too, so leave out --out, or name another")


def _report(result) -> None:
    t = f"t = {result.t_start:g} -> {result.t_end:g}"
    if result.time_unit_myr:
        t += f" ({result.t_end * result.time_unit_myr:.1f} Myr)"
    print(f"{result.name}: N = {result.n}, {result.steps} steps of dt = {result.dt:g}, {t}, "
          f"theta = {result.theta:g}, eps = {result.eps:g}, engine {result.device}")
    print("  modules                " + ", ".join(f"{k} {v}" for k, v in result.modules.items()))
    reasons = result.reasons or {}
    for label, key, note in (("relative energy error ", "rel_energy_error", ""),
                             ("momentum drift        ", "momentum_drift", " (|dP| / sum m|v|)"),
                             ("angular momentum drift", "angular_momentum_drift", "")):
        value = getattr(result, key)
        text = f"{value:.3e}{note}" if value is not None else f"n/a: {reasons.get(key, '?')}"
        print(f"  {label} {text}")
    for when, c in (("start", result.cluster_start), ("end", result.cluster_end)):
        if c:
            lag = ", ".join(f"{100 * float(f):g}% {r:.4g}" for f, r in c["lagrangian_radii"].items())
            print(f"  cluster at the {when:5s}   core radius {c['core_radius']:.4g}; Lagrangian "
                  f"radii {lag}")
    for when, r in (("start", result.ring_start), ("end", result.ring_end)):
        if r:
            sig = ", ".join(f"{1e3 * v:.3g}" for v in r["dispersion"])
            hits = (f", {r['collisions_per_step']} collisions in the last step"
                    if "collisions_per_step" in r else "")
            if r.get("deferred_per_step"):
                hits += (f" ({r['deferred_per_step']} touching pairs deferred to the next step: "
                         "the time step is too long for the collisions; shorten dt)")
            print(f"  ring at the {when:5s}      {r['orbits']:.2f} orbits: optical depth "
                  f"{r['optical_depth']:.3g}, filling factor {r['filling_factor']:.3g}, "
                  f"sigma (x, y, z) {sig} mm/s, thickness {r['thickness']:.3g} m{hits}")
    if result.time_steps:
        ts = result.time_steps
        print(f"  block time steps       {ts['levels']} levels, {ts['block_steps']} blocks in the "
              f"last step, {100 * ts['active_fraction']:.2f}% active on average")
    print(f"  time per step          {result.ms_per_step_median:.2f} ms (median); "
          f"wall {result.wall_s:.2f} s")
    if result.archive:
        count = result.snapshots
        print(f"  archive                {result.archive} ({count} snapshot{'s' * (count != 1)})")
    if result.out and not result.stopped:
        print(f"  final state written to {result.out}")
    error = result.rel_energy_error
    conserved = not result.ring_start and (result.modules or {}).get("collision") == "none"
    if conserved and error is not None and abs(error) > ENERGY_WARN:  # (rings: dissipative)
        say(f"galaxyview run: note: the total energy changed by {abs(error):.3g} of itself; "
            f"the run is not accurate: use a smaller --dt, a larger --eps or a smaller --theta")
    if result.stopped:
        done = (f"all {result.steps} steps ran, but" if result.steps == result.steps_asked
                else f"stopped after {result.steps} of {result.steps_asked} steps:")
        say(f"galaxyview run: {done} {result.stopped.rstrip('.')}. {result.saved[0].upper()}"
            f"{result.saved[1:]}.")
