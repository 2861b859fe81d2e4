"""Handlers of the headless commands: parse -> job -> print."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from galaxyview.cli import common
from galaxyview.cli.output import print_json, progress_bar, say
from galaxyview.errors import GalaxyviewError
from galaxyview.files import check_output_path


def check_out(out: str | None, overwrite: bool) -> None:
    """Fail before any work if --out cannot be written; ask before replacing a file."""
    if out is None:
        return
    from galaxyview.model.tipsy import radius_path

    existing = [p for p in (Path(out), radius_path(out)) if p.is_file()]
    if existing and not overwrite and sys.stdin is not None and sys.stdin.isatty():
        names = " and ".join(map(str, existing))
        overwrite = input(f"{names} exist(s). Overwrite? [y/N] ").strip().lower() in ("y", "yes")
    check_output_path(radius_path(out), overwrite)  # the radii's file beside the snapshot
    folder = check_output_path(out, overwrite).parent
    if not os.access(folder, os.W_OK):
        raise GalaxyviewError(f"--out {out}: folder {folder} is not writable")


def cmd_run(args) -> int:
    from galaxyview.jobs.run import run
    from galaxyview.simulation import open_simulation

    check_out(args.out, args.overwrite)
    sim = open_simulation(args.source, args.backend, args.n, args.theta, args.dt, args.eps,
                          **common.engine_options(args))
    try:
        say(f"{sim.name}: {sim.engine.n} particles, {sim.why}")
        with progress_bar(args.steps, sim.name) as update:
            result = run(sim.engine, sim.name, args.steps, update,
                         sim.units.time_myr if sim.units else None)
        if args.out:
            from galaxyview.model.tipsy import save_state

            _, pot = sim.engine.accelerations()
            save_state(args.out, sim.engine.state(), sim.engine.params, pot, overwrite=True)
            result.out = args.out
    finally:
        sim.close()
    if args.json:
        print_json(result.as_dict())
        return 0
    t = f"t = {result.t_start:g} -> {result.t_end:g}"
    if result.time_unit_myr:
        t += f" ({result.t_end * result.time_unit_myr:.1f} Myr)"
    print(f"{result.name}: N = {result.n}, {result.steps} steps of dt = {result.dt:g}, {t}, "
          f"theta = {result.theta:g}, eps = {result.eps:g}, engine {result.device}")
    print("  modules                " + ", ".join(f"{k} {v}" for k, v in result.modules.items()))
    print(f"  relative energy error  {result.rel_energy_error:.3e}")
    print(f"  momentum drift         {result.momentum_drift:.3e} (|dP| / sum m|v|)")
    print(f"  angular momentum drift {result.angular_momentum_drift:.3e}")
    print(f"  time per step          {result.ms_per_step_median:.2f} ms (median); "
          f"wall {result.wall_s:.2f} s")
    if result.out:
        print(f"  final state written to {result.out}")
    return 0


def cmd_accuracy(args) -> int:
    from galaxyview.jobs.accuracy import accuracy
    from galaxyview.model.ics.plummer import plummer_sphere

    if args.scene:
        from galaxyview.model.scene import load_scene

        scene = load_scene(args.scene)
        state = scene.build(n=args.n, backend="cpu")
        name, eps = scene.name, args.eps if args.eps is not None else scene.params.eps
    else:
        n = args.plummer or args.n or 16384
        state = plummer_sphere(n, np.random.default_rng(1))
        name, eps = f"plummer-{n}", 0.05 if args.eps is None else args.eps
    sample = args.sample or (None if state.n <= 32768 else 4096)
    with progress_bar(len(args.theta) + 1, "accuracy", unit="solve") as update:
        result = accuracy(state, name, args.theta, eps, args.backend, sample, progress=update,
                          device=args.device)
    if args.json:
        print_json(result.as_dict())
        return 0
    print(f"{result.name}: N = {result.n}, eps = {result.eps:g}, {result.device}; "
          f"reference: {result.reference}")
    print(f"{'theta':>6} {'p50':>10} {'p90':>10} {'p99':>10} {'pot p50':>10} {'pp/part':>8} "
          f"{'pc/part':>8} {'ms':>9}")
    for r in result.rows:
        print(f"{r.theta:6.3g} {r.p50:10.3e} {r.p90:10.3e} {r.p99:10.3e} {r.pot_p50:10.3e} "
              f"{r.pp_per_particle:8.0f} {r.pc_per_particle:8.0f} {r.force_ms:9.1f}")
    return 0


def cmd_bench(args) -> int:
    from galaxyview.engines import resolve_backend
    from galaxyview.bench.engine import bench_one

    if args.compare:
        return _bench_compare(args)
    kind, why = resolve_backend(args.backend, args.device)
    ns = args.n or ([1 << 20, 1 << 22, 1 << 24] if kind == "gpu" else [65536])
    thetas = args.theta or [0.4, 0.75]
    rows, device = [], None
    say(why)
    with progress_bar(len(ns) * len(thetas), "bench", unit="case") as update:
        for n in ns:
            for theta in thetas:
                row, device = bench_one(kind, n, theta, args.steps, args.warmup,
                                        device=args.device)
                rows.append(row)
                update(1)
    if args.json:
        print_json({"backend": kind, "device": device, "steps": args.steps,
                    "warmup": args.warmup, "rows": [r.as_dict() for r in rows]})
        return 0
    print(f"{device}: Plummer, eps 0.05, dt 1/16, medians of {args.steps} steps after "
          f"{args.warmup} warm-up")
    print(f"{'N':>9} {'theta':>5} {'sort':>7} {'build':>7} {'mpole':>7} {'walk':>8} {'integ':>7} "
          f"{'step':>8} {'pp/p':>6} {'pc/p':>6} {'TFLOP/s':>7} {'Mpart/s':>8} {'vs Bonsai':>10}")
    for r in rows:
        ph = r.phases_ms
        vs = f"{r.bonsai['step_ratio']:.2f}x" if r.bonsai else "-"
        print(f"{r.n:9d} {r.theta:5.2f} {ph['keys_sort']:7.2f} {ph['build']:7.2f} "
              f"{ph['multipoles']:7.2f} {ph['walk']:8.2f} {ph['integrate']:7.2f} {r.step_ms:8.2f} "
              f"{r.pp_per_particle:6.0f} {r.pc_per_particle:6.0f} {r.walk_tflops:7.3f} "
              f"{r.particles_per_s / 1e6:8.2f} {vs:>10}")
    return 0


def _bench_compare(args) -> int:
    from galaxyview.bench.cpu import compare
    from galaxyview.engines import create_engine

    if args.backend not in ("cpu", "auto"):
        raise GalaxyviewError("--compare times the CPU engines: use it with --backend cpu")
    ns = args.n or [1 << 14, 1 << 16, 1 << 18]
    thetas = args.theta or [0.5, 0.75]
    engine, _ = create_engine("cpu")  # compiles first, with its progress line
    device = engine.device_name
    engine.close()
    with progress_bar(len(ns) * len(thetas), "compare", unit="case") as update:
        rows = compare(ns, thetas, args.steps, args.sample, progress=update)
    if args.json:
        print_json({"device": device, "rows": [r.as_dict() for r in rows]})
        return 0
    print(f"{device}: Plummer, eps 0.05; force ms (a step less integration), median of "
          f"{args.steps} steps (reference: {max(1, args.steps // 3)}); median force error vs "
          f"float64 direct summation on {args.sample} particles; pytreegrav (quadrupole, "
          "parallel) interpolated to the same error")
    print(f"{'N':>8} {'theta':>5} {'error':>9} {'cpu ms':>8} {'ref ms':>8} {'x ref':>6} "
          f"{'ptg theta':>9} {'ptg ms':>8} {'x ptg':>6}")
    for r in rows:
        ratio = (lambda v: f"{v:6.1f}" if v else f"{'-':>6}")
        ptg_t = f"{r.pytreegrav_theta:9.2f}" if r.pytreegrav_theta else f"{'out':>9}"
        ptg_ms = f"{r.pytreegrav_ms:8.1f}" if r.pytreegrav_ms else f"{'-':>8}"
        print(f"{r.n:8d} {r.theta:5.2f} {r.error:9.2e} {r.cpu_ms:8.1f} {r.reference_ms:8.1f} "
              f"{ratio(r.vs_reference)} {ptg_t} {ptg_ms} {ratio(r.vs_pytreegrav)}")
    return 0


def cmd_scenes(args) -> int:
    from galaxyview.model.scene import shipped_scenes

    scenes = shipped_scenes()
    width = max((len(s[0]) for s in scenes), default=0)
    for name, description, _ in scenes:
        print(f"{name:<{width}}  {description}")
    return 0
