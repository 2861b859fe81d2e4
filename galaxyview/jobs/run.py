"""`galaxyview run`: evolve a scene or snapshot headless and report conservation and timing."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from galaxyview.engines.base import Engine
from galaxyview.errors import GalaxyviewError
from galaxyview.interrupt import Interrupt, what_stopped
from galaxyview.jobs.checkpoint import Checkpoints
from galaxyview.model import cluster, diagnostics
from galaxyview.model.ring_stats import ring_stats
from galaxyview.model.state import Component


@dataclass
class RunResult:
    name: str
    backend: str
    device: str
    n: int
    steps: int
    t_start: float
    t_end: float
    theta: float
    dt: float
    eps: float
    energy_start: float | None
    energy_end: float | None
    rel_energy_error: float | None
    momentum_drift: float | None
    angular_momentum_drift: float | None
    ms_per_step_median: float
    wall_s: float
    modules: dict | None = None  # integrator, boundary, collision by name
    time_unit_myr: float | None = None
    out: str | None = None
    archive: str | None = None  # the archive written, and how many snapshots it holds
    snapshots: int = 0
    stopped: str | None = None  # why the run ended before `steps_asked` steps
    steps_asked: int = 0
    saved: str | None = None  # where the last good state went after a stop
    reasons: dict | None = None  # why a value above is None (null in JSON)
    cluster_start: dict | None = None  # star clusters: density centre, core and Lagrangian radii
    cluster_end: dict | None = None
    time_steps: dict | None = None  # block time steps of the last step (Hermite)
    ring_start: dict | None = None  # shearing-sheet rings: optical depth, dispersion, ...
    ring_end: dict | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def is_cluster(state) -> bool:
    """A star cluster (every particle a star): `run` reports its core and Lagrangian radii."""
    return bool(state.n > 1 and np.all(state.component == Component.STAR))


def _momenta(state):
    mass = state.mass.astype(np.float64)
    pos = state.pos.astype(np.float64)
    vel = state.vel.astype(np.float64)
    p = diagnostics.linear_momentum(vel, mass)
    l = diagnostics.angular_momentum(pos, vel, mass)
    # scales for relative drifts: sum m|v| and sum m|x x v|
    p_scale = float(np.sum(mass * np.linalg.norm(vel, axis=1))) or 1.0
    l_scale = float(np.sum(mass * np.linalg.norm(np.cross(pos, vel), axis=1))) or 1.0
    return p, l, p_scale, l_scale


def run(engine: Engine, name: str, steps: int, progress=None, time_unit_myr=None,
        checkpoints: Checkpoints | None = None) -> RunResult:
    """Advance `engine` (already loaded) by `steps` steps; `progress(k)` is called per step;
    `checkpoints` stores states on the way. Ctrl-C stops at the end of the current step,
    and an engine failure (NaN, out of memory) after the last good step: the result says
    why in `stopped` (the engine then holds the last good state where it keeps one)."""
    start = engine.state()
    e0 = engine.energies().total
    p0, l0, p_scale, l_scale = _momenta(start)
    step_ms, stopped = [], None
    t0 = time.perf_counter()
    interrupt = Interrupt()
    try:
        with interrupt.deferred():
            if checkpoints is not None:
                checkpoints.save(engine)
            for _ in range(steps):
                engine.step(1)
                step_ms.append(engine.stats.step_ms)
                if checkpoints is not None:
                    checkpoints.after_step(engine)
                if progress:
                    progress(1)
                if interrupt.requested:
                    stopped = f"interrupted ({what_stopped()})"
                    break
    except KeyboardInterrupt:
        stopped = f"interrupted ({what_stopped()} twice: in the middle of a step)"
    except MemoryError:
        stopped = "out of memory"
    except GalaxyviewError as exc:
        stopped = str(exc)
    wall = time.perf_counter() - t0
    result = RunResult(
        name=name, backend=engine.name, device=engine.device_name, n=engine.n,
        steps=len(step_ms), t_start=float(start.time), t_end=float(engine.time),
        theta=engine.params.theta, dt=engine.params.dt, eps=engine.params.eps,
        energy_start=float(e0), energy_end=None, rel_energy_error=None, momentum_drift=None,
        angular_momentum_drift=None,
        ms_per_step_median=float(np.median(step_ms)) if step_ms else 0.0,
        wall_s=wall, modules=engine.modules, time_unit_myr=time_unit_myr, stopped=stopped,
        steps_asked=steps, reasons={})
    try:
        end = engine.state()
        e1 = engine.energies().total
    except GalaxyviewError as exc:  # a GPU engine's state after a failed step
        result.reasons = dict.fromkeys(("energy_end", "rel_energy_error", "momentum_drift",
                                        "angular_momentum_drift"), f"no valid end state: {exc}")
        return result
    p1, l1, _, _ = _momenta(end)
    sheet = engine.params.sheet
    if sheet is not None:
        result.ring_start, result.ring_end = (
            asdict(ring_stats(st.pos, st.vel, st.mass, st.radius, sheet, st.time))
            for st in (start, end))
        result.ring_end["collisions_per_step"] = engine.stats.collisions
        result.ring_end["deferred_per_step"] = engine.stats.deferred
    elif is_cluster(start):
        result.cluster_start = cluster.structure(start.pos, start.mass).as_dict()
        result.cluster_end = cluster.structure(end.pos, end.mass).as_dict()
    ts = engine.time_steps()
    if ts is not None:
        result.time_steps = {"levels": ts.levels, "block_steps": ts.block_steps,
                             "active_fraction": ts.active_fraction,
                             "counts": {int(k): int(c) for k, c in enumerate(ts.counts) if c}}
    result.energy_end = float(e1)
    result.momentum_drift = float(np.linalg.norm(p1 - p0) / p_scale)
    result.angular_momentum_drift = float(np.linalg.norm(l1 - l0) / l_scale)
    if e0 and np.isfinite(e0) and np.isfinite(e1):
        result.rel_energy_error = float(abs((e1 - e0) / e0))
    else:
        result.reasons["rel_energy_error"] = (
            "the initial energy is 0 (all masses zero?): no relative error" if e0 == 0 else
            "the energy is not finite")
    return result
