"""`galaxyview bench hierarchical`: individual (block) time steps against the shared step,
and the acceleration MAC against Bonsai's, on one engine.

- time to solution: a scene advanced to t_end with the shared leapfrog at several dt and with
  the hierarchical leapfrog; wall time (the engine waits for the device at each step's end)
  and the relative energy error at the end, with the potential energy both from the tree (the
  run's own) and by direct summation (`Engine.direct_energies`, `exact`: free of the tree's
  potential error, which changes with the configuration), so that runs of equal error can be
  compared;
- MAC cost: force time (median of steps after warm-up) and median force error against
  float64 direct summation on a sample (Engine.sample_forces) for theta (Bonsai's MAC) and
  alpha (the relative MAC) values, interpolated to given median errors;
- equilibrium: a Plummer sphere's Lagrangian radii before and after some crossing times.
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from galaxyview.bench.reference import step_medians
from galaxyview.engines import create_engine
from galaxyview.engines.base import PHASES
from galaxyview.model import cluster, diagnostics
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState

SAMPLE = 4096  # particles the force error is measured on
PHASES_FORCE = ("keys_sort", "build", "multipoles", "walk")


@dataclass
class SolutionRun:
    label: str
    integrator: str
    dt: float
    eta: float
    t_end: float
    steps: int
    wall_s: float
    rel_energy_error: float
    exact_energy_error: float  # potentials by direct summation at the start and the end
    force_evaluations: float  # of all particles (block steps x mean active fraction), summed
    levels: list = field(default_factory=list)  # occupation (particles a level) at the end
    phases_ms: dict = field(default_factory=dict)  # summed over the run (engine stats)
    interactions_per_particle: float = 0.0  # summed over the run


@dataclass
class MacPoint:
    mac: str
    value: float  # theta or alpha
    force_ms: float
    median_error: float
    interactions_per_particle: float


def _run(engine, state, t_end: float, label: str, progress=None) -> SolutionRun:
    p = engine.params
    engine.load(state)
    e0, x0 = engine.energies().total, engine.direct_energies().total
    steps = max(1, round(t_end / p.dt))
    evaluations, t0 = 0.0, time.perf_counter()
    phases, inter = dict.fromkeys(PHASES, 0.0), 0.0
    for _ in range(steps):
        engine.step(1)
        ts = engine.time_steps()
        evaluations += 1.0 if ts is None else ts.block_steps * ts.active_fraction
        for k in PHASES:
            phases[k] += engine.stats.timings_ms.get(k, 0.0)
        inter += engine.stats.pp_per_particle + engine.stats.pc_per_particle
        if progress:
            progress(1)
    wall = time.perf_counter() - t0
    err = abs(engine.energies().total - e0) / abs(e0)
    exact = abs(engine.direct_energies().total - x0) / abs(x0)
    ts = engine.time_steps()
    levels = [] if ts is None else [int(c) for c in ts.counts[:np.flatnonzero(ts.counts)[-1] + 1]]
    return SolutionRun(label, p.integrator, p.dt, p.eta, t_end, steps, wall, err, exact,
                       evaluations, levels, phases, inter)


def time_to_solution(state: ParticleState, base: Params, t_end: float, settings, device=0,
                     progress=None) -> tuple[list[SolutionRun], str]:
    """One run per (label, changes to base, environment) in settings, from the same state;
    the environment (e.g. GALAXYVIEW_TREE_REFIT) is set for that run only."""
    runs, name = [], ""
    for label, changes, env in settings:
        kept = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        engine, _ = create_engine("gpu", base.with_(**changes), device=device)
        try:
            name = engine.device_name
            runs.append(_run(engine, state, t_end, label, progress))
        finally:
            engine.close()
            for k, v in kept.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return runs, name


def mac_points(state: ParticleState, base: Params, thetas, alphas, device=0, steps=5,
               warmup=2, progress=None) -> tuple[list[MacPoint], str]:
    """Force time and median error of each MAC setting (a tiny dt: the state stays put)."""
    rng = np.random.default_rng(0)
    targets = np.sort(rng.choice(state.n, min(SAMPLE, state.n), replace=False))
    out, name = [], ""
    for mac, values in (("bonsai", thetas), ("acceleration", alphas)):
        for v in values:
            change = {"theta": v} if mac == "bonsai" else {"alpha": v}
            engine, _ = create_engine("gpu", base.with_(mac=mac, dt=1e-9, **change),
                                      device=device)
            try:
                name = engine.device_name
                engine.load(state)  # the relative MAC's first evaluation is Bonsai's
                phases, pp, pc = step_medians(engine, steps, warmup)
                acc, ref = engine.sample_forces(targets)
                err = float(np.median(diagnostics.relative_force_errors(acc, ref)))
                out.append(MacPoint(mac, v, sum(phases[k] for k in PHASES_FORCE), err, pp + pc))
            finally:
                engine.close()
            if progress:
                progress(1)
    return out, name


def time_at_error(points, mac: str, error: float) -> float | None:
    """Force ms of `mac` at median error `error`, interpolated in log-log; None outside."""
    pts = sorted((p.median_error, p.force_ms) for p in points if p.mac == mac)
    errs = np.log([e for e, _ in pts])
    if not len(pts) or not errs[0] <= np.log(error) <= errs[-1]:
        return None
    return float(np.exp(np.interp(np.log(error), errs, np.log([t for _, t in pts]))))


def equilibrium(state: ParticleState, params: Params, t_end: float, device=0,
                progress=None) -> dict:
    """Lagrangian radii (10, 50, 90% of the mass) at the start and at t_end, and the largest
    relative change."""
    engine, _ = create_engine("gpu", params, device=device)
    try:
        engine.load(state)
        start = cluster.structure(state.pos, state.mass).lagrangian
        t0 = time.perf_counter()
        for _ in range(max(1, round(t_end / params.dt))):
            engine.step(1)
            if progress:
                progress(1)
        wall = time.perf_counter() - t0
        end_state = engine.state()
        end = cluster.structure(end_state.pos, end_state.mass).lagrangian
        change = max(abs(end[f] / start[f] - 1) for f in (0.1, 0.5, 0.9))
        return {"n": state.n, "t_end": t_end, "wall_s": wall, "start": start, "end": end,
                "max_rel_change": change, "params": asdict(params),
                "device": engine.device_name}
    finally:
        engine.close()
