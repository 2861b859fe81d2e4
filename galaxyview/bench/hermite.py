"""`galaxyview bench hermite`: the GPU Hermite's force kernel rate by active-block size, and
star clusters advanced in N-body time (Plummer, equal masses, Henon units).

Flops: 60 per acc + jerk interaction (Sapporo2's convention); the FP32 peak is the H100's
measured FMA rate (the device kit's figure).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from galaxyview.engines import create_engine
from galaxyview.model import cluster
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

FLOPS_HERMITE4 = 60
FP32_PEAK_TFLOPS = 65.0
BLOCKS = (1, 32, 1024)  # and N: the full block


@dataclass
class KernelRow:
    n: int
    active: int
    us: float
    interactions_per_s: float
    tflops: float
    peak_fraction: float


@dataclass
class ClusterRun:
    n: int
    eps: float
    eta: float
    time_units: float
    wall_s: float
    rel_energy_error: float
    block_steps: int
    levels: int
    active_fraction: float
    start: dict
    end: dict

    def as_dict(self) -> dict:
        return asdict(self)


def _engine(n: int, eps: float, eta: float, dt: float, device: int, seed: int = 1):
    state = plummer_sphere(n, np.random.default_rng(seed))
    engine, _ = create_engine("gpu", Params(eps=eps, eta=eta, dt=dt, integrator="hermite4"),
                              device=device)
    engine.load(state)
    return engine, state


def kernel_rates(ns, device: int = 0, eps: float = 1e-4) -> tuple[list[KernelRow], str]:
    from galaxyview.engines.integrators.hermite_gpu import force_rates

    rows, name = [], ""
    for n in ns:
        engine, _ = _engine(n, eps, 0.01, 1 / 16, device)
        try:
            name = engine.device_name
            for m, ms in force_rates(engine, [*BLOCKS, n]):
                rate = m * n / (ms * 1e-3)
                tflops = rate * FLOPS_HERMITE4 / 1e12
                rows.append(KernelRow(n, m, ms * 1e3, rate, tflops, tflops / FP32_PEAK_TFLOPS))
        finally:
            engine.close()
    return rows, name


def advance_cluster(n: int, until: float, eps: float = 1e-4, eta: float = 0.01,
                    dt: float = 1 / 16, device: int = 0, progress=None) -> ClusterRun:
    """Advance an n-star Plummer sphere to t = until; wall time, energy error, block steps
    (summed) and the structure at the start and the end."""
    engine, state = _engine(n, eps, eta, dt, device)
    try:
        e0 = engine.energies().total
        start = cluster.structure(state.pos, state.mass).as_dict()
        steps = int(round(until / dt))
        blocks, active = 0, 0.0
        t0 = time.perf_counter()
        for _ in range(steps):
            engine.step(1)
            ts = engine.time_steps()
            blocks += ts.block_steps
            active += ts.active_fraction * ts.block_steps
            if progress:
                progress(1)
        wall = time.perf_counter() - t0
        end_state = engine.state()
        return ClusterRun(n, eps, eta, until, wall, abs(engine.energies().total / e0 - 1),
                          blocks, ts.levels, active / max(blocks, 1), start,
                          cluster.structure(end_state.pos, end_state.mass).as_dict())
    finally:
        engine.close()
