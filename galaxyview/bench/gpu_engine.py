"""Measure the GPU engine: per-phase CUDA-event medians, interactions, walk TFLOP/s and force
error, next to Bonsai's reference table (docs/gpu-engine.md). For the engine's developers:

    galaxyview bench gpu-engine --n 1048576 4194304 --theta 0.4 0.75 [--json]
    galaxyview bench gpu-engine --selfcheck 65536   (a short run for compute-sanitizer)
"""
from __future__ import annotations

import json
import time

import numpy as np

from galaxyview.bench.reference import bonsai_ratios, step_medians, walk_tflops
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params


def measure(eng, state, theta: float, steps: int, warmup: int = 2, targets: int = 1000) -> dict:
    from galaxyview.engines.gpu.inspect import direct_reference, relative_errors

    eng.set_params(theta=theta)
    eng.load(state)
    sample = np.random.default_rng(0).choice(state.n, min(targets, state.n), replace=False)
    acc, _ = eng.accelerations()
    ref, _ = direct_reference(eng, sample)
    err = relative_errors(acc[sample], ref)
    phases, pp, pc = step_medians(eng, steps, warmup)
    n = state.n
    step = float(sum(phases.values()))
    out = dict(n=n, theta=theta, steps=steps, step_ms=step,
               **{f"{k}_ms": v for k, v in phases.items()})
    out["tree_ms"] = out["keys_sort_ms"] + out["build_ms"] + out["multipoles_ms"]
    out["pp_per_particle"] = pp
    out["pc_per_particle"] = pc
    out["walk_tflops"] = walk_tflops(pp, pc, n, phases["walk"])
    out["particles_per_s"] = n / (step / 1e3)
    out["force_err_median"] = float(np.median(err))
    out["force_err_p99"] = float(np.percentile(err, 99))
    out["bytes_per_particle"] = eng.device_memory_bytes() / n
    ref = bonsai_ratios(n, theta, out["walk_ms"], out["tree_ms"], step)
    if ref:
        out.update({f"bonsai_{k}": v for k, v in ref.items() if not k.endswith("ratio")})
        out.update(walk_ratio=ref["walk_ratio"], tree_ratio=ref["build_ratio"],
                   step_ratio=ref["step_ratio"])
    return out


def cpu_error(theta: float, eng=None, n: int = 50000, eps: float = 0.05) -> dict:
    """The CPU tree's force error on a Plummer sphere of n (the accuracy yardstick), and the
    GPU engine's on the same particles when `eng` is given."""
    from galaxyview.engines.cpu.direct import direct_forces
    from galaxyview.engines.cpu.groups import make_groups
    from galaxyview.engines.cpu.multipoles import compute_multipoles
    from galaxyview.engines.cpu.tree import build_cells, sort_particles
    from galaxyview.engines.cpu.forces import tree_forces
    from galaxyview.engines.gpu.inspect import relative_errors

    state = plummer_sphere(n, np.random.default_rng(1))
    tree = build_cells(sort_particles(state.pos, state.mass))
    compute_multipoles(tree)
    make_groups(tree, 64)
    acc, _, _, _ = tree_forces(tree, theta, eps)
    sample = np.random.default_rng(0).choice(n, 1000, replace=False)
    ref, _ = direct_forces(tree.pos, tree.mass, eps, targets=sample)
    err = relative_errors(acc[sample], ref)
    out = dict(n=n, theta=theta, median=float(np.median(err)), p99=float(np.percentile(err, 99)))
    if eng is not None:
        eng.set_params(theta=theta, eps=eps)
        eng.load(state)
        g_acc, _ = eng.accelerations()
        g_err = relative_errors(g_acc[tree.order[sample]], ref)
        out.update(gpu_median=float(np.median(g_err)), gpu_p99=float(np.percentile(g_err, 99)))
    return out


def table(rows) -> str:
    head = ("N", "theta", "keys+sort", "build", "mpoles", "walk", "integ", "step", "pp/p", "pc/p",
            "TFLOP/s", "Mpart/s", "err med", "err p99", "B/p", "walk/B", "tree/B", "step/B")
    lines = [" | ".join(head)]
    for r in rows:
        lines.append(" | ".join([
            f"{r['n']}", f"{r['theta']}", f"{r['keys_sort_ms']:.2f}", f"{r['build_ms']:.2f}",
            f"{r['multipoles_ms']:.2f}", f"{r['walk_ms']:.2f}", f"{r['integrate_ms']:.2f}",
            f"{r['step_ms']:.2f}", f"{r['pp_per_particle']:.0f}", f"{r['pc_per_particle']:.0f}",
            f"{r['walk_tflops']:.1f}", f"{r['particles_per_s'] / 1e6:.0f}",
            f"{r['force_err_median']:.1e}", f"{r['force_err_p99']:.1e}",
            f"{r['bytes_per_particle']:.0f}", f"{r.get('walk_ratio', float('nan')):.2f}",
            f"{r.get('tree_ratio', float('nan')):.2f}", f"{r.get('step_ratio', float('nan')):.2f}"]))
    return "\n".join(lines)


def selfcheck(n: int) -> list[str]:
    """A short tree run (load, 2 steps, energies) and a direct run, for compute-sanitizer: a
    line of each."""
    from galaxyview.engines.gpu.engine import GPUEngine

    state = plummer_sphere(n, np.random.default_rng(0))
    lines = []
    for gravity in ("tree", "direct"):
        eng = GPUEngine(Params(theta=0.6, eps=0.05, dt=1 / 64), gravity=gravity)
        eng.load(state)
        eng.step(2)
        e = eng.energies()
        eng.tree_boxes(0, 4)
        lines.append(f"selfcheck {gravity} n={n}: E={e.total:.6f} "
                     f"pp/p={eng.stats.pp_per_particle:.0f}")
        eng.close()
    return lines


def main(a, out) -> dict:
    """`galaxyview bench gpu-engine` (a: n, theta, steps, cpu_error, selfcheck): its lines to
    out(line) as they come; the figures."""
    if a.selfcheck:
        lines = selfcheck(a.selfcheck)
        out("\n".join(lines))
        return {"selfcheck": lines}
    from galaxyview.engines.gpu.engine import GPUEngine

    eng = GPUEngine(Params(theta=a.theta[0], eps=0.05, dt=1 / 16))
    rows = []
    for n in a.n:
        t0 = time.perf_counter()
        state = plummer_sphere(n, np.random.default_rng(42))
        out(f"# N={n}: initial conditions in {time.perf_counter() - t0:.1f} s")
        for theta in a.theta:
            rows.append(measure(eng, state, theta, a.steps))
            out(json.dumps(rows[-1]))
    cpu = [cpu_error(t, eng) for t in a.theta] if a.cpu_error else []
    eng.close()
    out(f"# device: {eng.device_name}")
    out(table(rows))
    for c in cpu:
        out(f"# force error, N={c['n']}, theta={c['theta']}: CPU median {c['median']:.2e} "
              f"p99 {c['p99']:.2e}; GPU median {c['gpu_median']:.2e} p99 {c['gpu_p99']:.2e}")
    return dict(device=eng.device_name, rows=rows, cpu_error=cpu)
