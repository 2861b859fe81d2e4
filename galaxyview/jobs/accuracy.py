"""`galaxyview accuracy`: tree force errors against float64 direct summation, per theta."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from galaxyview.engines import create_engine
from galaxyview.model import diagnostics
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState


@dataclass
class AccuracyRow:
    theta: float
    p50: float
    p90: float
    p99: float
    pot_p50: float
    pp_per_particle: float
    pc_per_particle: float
    force_ms: float

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class AccuracyResult:
    name: str
    n: int
    eps: float
    backend: str
    device: str
    reference: str
    rows: list

    def as_dict(self) -> dict:
        d = asdict(self)
        d["rows"] = [r.as_dict() for r in self.rows]
        return d


def direct_reference(state: ParticleState, eps: float, targets=None):
    """float64 direct-summation accelerations and potentials (optionally for a target subset)."""
    from galaxyview.engines.cpu.direct import direct_forces

    return direct_forces(state.pos, state.mass, eps, targets=targets)


def accuracy(state: ParticleState, name: str, thetas, eps: float, backend: str = "cpu",
             sample: int | None = None, seed: int = 0, progress=None,
             device: int = 0) -> AccuracyResult:
    """Force-error percentiles for each theta; `sample` limits the reference to that many
    randomly chosen particles (direct summation costs N * sample)."""
    targets = None
    if sample is not None and sample < state.n:
        targets = np.sort(np.random.default_rng(seed).choice(state.n, sample, replace=False))
    a_ref, pot_ref = direct_reference(state, eps, targets)
    if progress:
        progress(1)
    rows = []
    engine = None
    for theta in thetas:
        params = Params(theta=theta, eps=eps)
        if engine is None:
            engine, _ = create_engine(backend, params, device=device)
            engine.load(state)
        else:
            engine.set_params(theta=theta)
        acc, pot = engine.accelerations()
        force_ms = engine.stats.step_ms  # the force evaluation that load/set_params made
        if targets is not None:
            acc, pot = acc[targets], pot[targets]
        p50, p90, p99 = diagnostics.force_error_percentiles(acc, a_ref, (50, 90, 99))
        pot_err = np.abs(pot - pot_ref) / np.abs(pot_ref)
        rows.append(AccuracyRow(theta, float(p50), float(p90), float(p99),
                                float(np.median(pot_err)), engine.stats.pp_per_particle,
                                engine.stats.pc_per_particle, force_ms))
        if progress:
            progress(1)
    result = AccuracyResult(name, state.n, eps, engine.name, engine.device_name,
                            "float64 direct summation" + (f" on {len(targets)} sampled particles"
                                                          if targets is not None else ""), rows)
    engine.close()
    return result
