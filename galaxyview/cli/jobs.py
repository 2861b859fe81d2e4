"""Handlers of the headless commands: parse -> job -> print."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError
from galaxyview.cli.output import print_json, progress_bar, say


def cmd_accuracy(args) -> int:
    from galaxyview.jobs.accuracy import accuracy
    from galaxyview.model.ics.plummer import plummer_sphere

    if args.scene:
        from galaxyview.snapshots import load_source, params_of

        state, scene, snap = load_source(args.scene, args.n, "cpu")
        if snap is not None:
            snap.close()
        base = scene.params if scene else params_of(snap)
        name = scene.name if scene else Path(args.scene).name
        eps = args.eps if args.eps is not None else base.eps
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


def cmd_bench_engine(args) -> int:
    """`galaxyview bench engine` (plain `bench`): the per-phase table."""
    from galaxyview.engines import PHASES, resolve_backend
    from galaxyview.bench.engine import bench_one

    scene = None
    if args.scene:
        from galaxyview.model.scene import load_scene

        scene = load_scene(args.scene)
        if scene.model == "ring":
            raise GalaxyviewError(f"{args.scene} is a ring scene: galaxyview bench rings "
                                  f"--scene {args.scene} times its step")
    kind, why = resolve_backend(args.backend, args.device)
    ns = args.n or ([1 << 20, 1 << 22, 1 << 24] if kind == "gpu" else [65536])
    thetas = args.theta
    rows, device = [], None
    say(why)
    with progress_bar(len(ns) * len(thetas), "bench", unit="case") as update:
        for n in ns:
            for theta in thetas:
                row, device = bench_one(kind, n, theta, args.steps, args.warmup,
                                        device=args.device, scene=scene)
                rows.append(row)
                update(1)
    if args.json:
        print_json({"backend": kind, "device": device, "steps": args.steps,
                    "warmup": args.warmup, "rows": [r.as_dict() for r in rows]})
        return 0
    what = (f"{scene.name}, eps {scene.params.eps:g}, dt {scene.params.dt:g}" if scene else
            "Plummer, eps 0.05, dt 1/16")
    print(f"{device}: {what}, medians of {args.steps} steps after {args.warmup} warm-up")
    print(f"{'N':>9} {'theta':>5} {'sort':>7} {'build':>7} {'mpole':>7} {'walk':>8} {'integ':>7} "
          f"{'step':>8} {'wall':>8} {'pp/p':>6} {'pc/p':>6} {'TFLOP/s':>7} {'Mpart/s':>8} "
          f"{'vs Bonsai':>10}")
    for r in rows:
        ph = r.phases_ms
        vs = f"{r.bonsai['step_ratio']:.2f}x" if r.bonsai else "-"
        print(f"{r.n:9d} {r.theta:5.2f} {ph['keys_sort']:7.2f} {ph['build']:7.2f} "
              f"{ph['multipoles']:7.2f} {ph['walk']:8.2f} {ph['integrate']:7.2f} {r.step_ms:8.2f} "
              f"{r.figures.get('wall_ms', 0.0):8.2f} {r.pp_per_particle:6.0f} "
              f"{r.pc_per_particle:6.0f} {r.walk_tflops:7.3f} {r.particles_per_s / 1e6:8.2f} "
              f"{vs:>10}")
        more = ({k: v for k, v in ph.items() if k not in PHASES}
                | {k: v for k, v in r.figures.items() if k != "wall_ms"})
        if more:  # the parallel engine's phases (slowest process of each)
            print(" " * 16 + "  ".join(f"{k} {v:.0f}" if abs(v) >= 100 else f"{k} {v:.2f}"
                                       for k, v in more.items()))
    return 0


def cmd_bench_hermite(args) -> int:
    from galaxyview.bench import hermite
    ns = args.n or [1 << 14, 1 << 16, 1 << 18, 1 << 20]
    say("GPU Hermite: force kernel by active block, then a 64k Plummer for one time unit")
    rows, device = hermite.kernel_rates(ns, args.device)
    with progress_bar(16, "64k cluster", unit="step") as update:
        run = hermite.advance_cluster(1 << 16, 1.0, device=args.device, progress=update)
    if args.json:
        print_json({"device": device, "flops_per_interaction": hermite.FLOPS_HERMITE4,
                    "fp32_peak_tflops": hermite.FP32_PEAK_TFLOPS,
                    "kernel": [r.__dict__ for r in rows], "cluster": run.as_dict()})
        return 0
    print(f"{device}: acc + jerk kernel, {hermite.FLOPS_HERMITE4} flops an interaction, "
          f"FP32 peak {hermite.FP32_PEAK_TFLOPS:g} TFLOP/s")
    print(f"{'N':>9} {'active':>9} {'us':>10} {'Gint/s':>8} {'TFLOP/s':>8} {'% peak':>7}")
    for r in rows:
        print(f"{r.n:9d} {r.active:9d} {r.us:10.1f} {r.interactions_per_s / 1e9:8.1f} "
              f"{r.tflops:8.2f} {100 * r.peak_fraction:7.1f}")
    print(f"Plummer N={run.n}, eps {run.eps:g}, eta {run.eta:g}: t = {run.time_units:g} in "
          f"{run.wall_s:.2f} s, |dE/E| {run.rel_energy_error:.2e}, {run.block_steps} block "
          f"steps (mean active fraction {run.active_fraction:.4f}), {run.levels} levels at the end")
    return 0


def cmd_bench_rings(args) -> int:
    from galaxyview.bench.rings import bench_rings
    from galaxyview.engines import resolve_backend
    from galaxyview.model.scene import load_scene

    if load_scene(args.scene).model != "ring":
        raise GalaxyviewError(f"{args.scene} is not a ring scene: galaxyview bench engine "
                              f"--scene {args.scene} times its step")
    kind, why = resolve_backend(args.backend, args.device)
    ns = args.n or ([100_000, 1_000_000, 4_000_000] if kind == "gpu" else [4000])
    say(why)
    with progress_bar(len(ns), f"bench {args.scene}", unit="N") as update:
        rows, device = bench_rings(args.scene, ns, kind, args.steps, args.warmup,
                                   args.rebound_steps, args.rebound_max, args.device, update)
    if args.json:
        print_json({"scene": args.scene, "backend": kind, "device": device,
                    "steps": args.steps, "rows": [r.as_dict() for r in rows]})
        return 0
    print(f"{args.scene} on {device}: ms a step (medians of {args.steps} steps after "
          f"{args.warmup} warm-up); REBOUND on this machine's CPU")
    print(f"{'N':>9} {'gravity':>9} {'search':>8} {'resolve':>8} {'integ':>7} {'step':>9} "
          f"{'coll/step':>9} {'REBOUND':>10} {'speed-up':>8}")
    for r in rows:
        ph = r.phases_ms
        reb = f"{r.rebound_ms:10.1f}" if r.rebound_ms else f"{'-':>10}"
        up = f"{r.speedup:7.3g}x" if r.speedup else f"{'-':>8}"
        print(f"{r.n:9d} {ph['gravity']:9.2f} {ph['collide_search']:8.2f} "
              f"{ph['collide_resolve']:8.2f} {ph['integrate']:7.2f} {r.step_ms:9.2f} "
              f"{r.collisions_per_step:9.0f} {reb} {up}")
    notes = sorted({r.rebound_note for r in rows if r.rebound_note})
    for note in notes:
        print(f"  {note}")
    return 0


def cmd_bench_cpu(args) -> int:
    from galaxyview.bench.cpu import compare
    from galaxyview.engines import create_engine

    ns = args.n
    thetas = args.theta
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
