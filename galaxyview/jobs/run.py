"""`galaxyview run`: evolve a scene or snapshot headless and report conservation and timing."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from galaxyview.engines.base import Engine
from galaxyview.model import diagnostics


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
    energy_start: float
    energy_end: float
    rel_energy_error: float
    momentum_drift: float
    angular_momentum_drift: float
    ms_per_step_median: float
    wall_s: float
    modules: dict | None = None  # integrator, boundary, collision by name
    time_unit_myr: float | None = None
    out: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


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


def run(engine: Engine, name: str, steps: int, progress=None, time_unit_myr=None) -> RunResult:
    """Advance `engine` (already loaded) by `steps` steps; `progress(k)` is called per step."""
    start = engine.state()
    e0 = engine.energies().total
    p0, l0, p_scale, l_scale = _momenta(start)
    step_ms = []
    t0 = time.perf_counter()
    for _ in range(steps):
        engine.step(1)
        step_ms.append(engine.stats.step_ms)
        if progress:
            progress(1)
    wall = time.perf_counter() - t0
    end = engine.state()
    e1 = engine.energies().total
    p1, l1, _, _ = _momenta(end)
    return RunResult(
        name=name, backend=engine.name, device=engine.device_name, n=engine.n, steps=steps,
        t_start=float(start.time), t_end=float(engine.time),
        theta=engine.params.theta, dt=engine.params.dt, eps=engine.params.eps,
        energy_start=float(e0), energy_end=float(e1),
        rel_energy_error=float(abs((e1 - e0) / e0)) if e0 else float("nan"),
        momentum_drift=float(np.linalg.norm(p1 - p0) / p_scale),
        angular_momentum_drift=float(np.linalg.norm(l1 - l0) / l_scale),
        ms_per_step_median=float(np.median(step_ms)) if step_ms else 0.0,
        wall_s=wall, modules=engine.modules, time_unit_myr=time_unit_myr,
    )
