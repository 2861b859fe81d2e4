"""`galaxyview bench hierarchical solution|mac|equilibrium` (bench/hierarchical.py)."""
from __future__ import annotations

import numpy as np

from galaxyview.cli.output import print_json, progress_bar, say
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

GYR_MYR = 1000.0
PLUMMER_CROSSING = 2.0 * np.sqrt(2.0)  # crossing time of a Plummer sphere (G = M = a = 1)


def _source(args, n: int):
    """(state, base params, name, one Gyr in N-body time or None)."""
    name = args.scene or ("plummer" if args.hierarchical == "equilibrium" else "mw-andromeda")
    if name == "plummer":
        return plummer_sphere(n, np.random.default_rng(1)), Params(eps=0.05, dt=1 / 16), name, None
    from galaxyview.model.scene import load_scene

    scene = load_scene(name)
    gyr = scene.units.time(GYR_MYR) if scene.units else None
    return scene.build(n, "gpu"), scene.params, scene.name, gyr


def bench_hierarchical(args) -> int:
    from galaxyview.bench import hierarchical as hb
    from galaxyview.engines import resolve_backend

    resolve_backend("gpu", args.device)  # a clear error where there is no GPU
    ns = args.n or [1 << 20]
    out = []
    for n in ns:
        state, base, name, gyr = _source(args, n)
        if args.theta and args.hierarchical == "solution":
            base = base.with_(theta=args.theta[0])
        if args.hierarchical == "solution":
            out.append(_solution(args, hb, state, base, name, gyr))
        elif args.hierarchical == "mac":
            out.append(_mac(args, hb, state, base, name))
        else:
            out.append(_equilibrium(args, hb, state, base))
    if args.json:
        print_json({"mode": args.hierarchical, "results": out})
    return 0


def _solution(args, hb, state, base, name, gyr) -> dict:
    t_end = args.until or gyr or 10.0
    dts = args.dt or [base.dt, base.dt / 2, base.dt / 4]
    dt_max = args.dt_max or 2 * base.dt
    settings = [(f"shared dt={dt:g}", {"dt": dt}, {}) for dt in dts]
    refits = {"": {}}
    if args.refit is not None:
        refits = {"": {"GALAXYVIEW_TREE_REFIT": "off"},
                  f" refit {args.refit:g}": {"GALAXYVIEW_TREE_REFIT": f"{args.refit:g}"}}
    settings += [(f"hierarchical dt_max={dt_max:g} eta={eta:g}{tag}",
                  {"dt": dt_max, "eta": eta, "integrator": "leapfrog-hier"}, env)
                 for eta in (args.eta or [0.02, 0.01]) for tag, env in refits.items()]
    total = sum(max(1, round(t_end / c["dt"])) for _, c, _ in settings)
    say(f"{name}, N = {state.n:,}: to t = {t_end:g} ({len(settings)} runs)")
    with progress_bar(total, "solution", unit="step") as update:
        runs, device = hb.time_to_solution(state, base, t_end, settings, args.device, update)
    if not args.json:
        print(f"{device}: {name}, N = {state.n:,}, theta {base.theta:g}, eps {base.eps:g}, "
              f"t = 0..{t_end:g}")
        print(f"{'run':<46} {'steps':>6} {'wall s':>8} {'|dE/E|':>9} {'exact':>9} {'evals':>7} "
              f"{'int/p':>7}  seconds in sort/build/multipoles/walk/integrate; levels")
        for r in runs:
            ph = "/".join(f"{v / 1e3:.2f}" for v in r.phases_ms.values())
            print(f"{r.label:<46} {r.steps:6d} {r.wall_s:8.2f} {r.rel_energy_error:9.2e} "
                  f"{r.exact_energy_error:9.2e} "
                  f"{r.force_evaluations:7.1f} {r.interactions_per_particle:7.0f}  {ph}; "
                  f"{r.levels}")
    return {"scene": name, "n": state.n, "t_end": t_end, "device": device,
            "runs": [r.__dict__ for r in runs]}


def _mac(args, hb, state, base, name) -> dict:
    thetas = args.theta or [0.3, 0.4, 0.5, 0.6, 0.75, 0.9]
    alphas = args.alpha or [0.02, 0.005, 0.002, 0.001, 5e-4, 2e-4, 1e-4]
    with progress_bar(len(thetas) + len(alphas), "mac", unit="setting") as update:
        points, device = hb.mac_points(state, base, thetas, alphas, args.device, args.steps,
                                       args.warmup, update)
    at = {f"{e:g}": {m: hb.time_at_error(points, m, e) for m in ("bonsai", "acceleration")}
          for e in (1e-3, 1e-4)}
    if not args.json:
        print(f"{device}: {name}, N = {state.n:,}, eps {base.eps:g}: force ms (median of "
              f"{args.steps}) and median force error on {hb.SAMPLE} particles")
        print(f"{'mac':<13} {'value':>8} {'force ms':>9} {'p50 error':>10} {'int/part':>9}")
        for p in points:
            print(f"{p.mac:<13} {p.value:8.3g} {p.force_ms:9.2f} {p.median_error:10.2e} "
                  f"{p.interactions_per_particle:9.0f}")
        for e, t in at.items():
            fmt = lambda v: "-" if v is None else f"{v:.2f} ms"  # noqa: E731
            print(f"at median error {e}: Bonsai {fmt(t['bonsai'])}, acceleration "
                  f"{fmt(t['acceleration'])}")
    return {"scene": name, "n": state.n, "device": device,
            "points": [p.__dict__ for p in points], "time_at_error": at}


def _equilibrium(args, hb, state, base) -> dict:
    t_end = args.until or 10 * PLUMMER_CROSSING
    params = base.with_(integrator="leapfrog-hier", dt=args.dt_max or 1 / 16,
                        eta=(args.eta or [0.02])[0], theta=(args.theta or [0.75])[0])
    with progress_bar(max(1, round(t_end / params.dt)), "equilibrium", unit="step") as update:
        res = hb.equilibrium(state, params, t_end, args.device, update)
    if not args.json:
        print(f"{res['device']}: Plummer N = {state.n:,}, hierarchical dt_max {params.dt:g} "
              f"eta {params.eta:g}, t = 0..{t_end:g} in {res['wall_s']:.1f} s")
        for f in (0.1, 0.5, 0.9):
            print(f"  r({f:.0%}) {res['start'][f]:.4f} -> {res['end'][f]:.4f}")
        print(f"  largest change {100 * res['max_rel_change']:.2f}%")
    res["start"] = {str(k): v for k, v in res["start"].items()}
    res["end"] = {str(k): v for k, v in res["end"].items()}
    return res
