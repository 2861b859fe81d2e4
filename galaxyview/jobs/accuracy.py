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


# -- the viewer's live readout ------------------------------------------------------------------
LIVE_SAMPLE = 2000  # particles checked on the GPU
HOST_PAIRS = 2_000_000  # direct-summation pairs a host engine's check may cost (~30 ms numpy)
LIVE_SHARE = 0.05  # at most this share of the wall time goes to checks


@dataclass(frozen=True)
class LiveAccuracy:
    p50: float  # median relative force error of the sample
    p99: float
    sample: int
    ms: float  # what the check cost

    def next_after_s(self, floor_s: float = 0.3) -> float:
        """Seconds to wait before the next check: a few a second at most, and no more than
        LIVE_SHARE of the time."""
        return max(floor_s, self.ms / 1e3 / LIVE_SHARE)


def live_sample(n: int, on_gpu: bool, seed: int = 0) -> np.ndarray:
    """Random particle indices (loaded order) for the live check: LIVE_SAMPLE on the GPU; on
    the host as many as HOST_PAIRS allow (at least 64, at most all)."""
    size = LIVE_SAMPLE if on_gpu else max(64, HOST_PAIRS // max(n, 1))
    size = min(size, LIVE_SAMPLE, n)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def live_force_errors(engine, targets: np.ndarray) -> LiveAccuracy | None:
    """Force-error percentiles of `targets` against direct summation on the engine's own
    device (Engine.sample_forces); None where the engine cannot, or for direct gravity."""
    import time

    t0 = time.perf_counter()
    found = engine.sample_forces(targets)
    if found is None:
        return None
    acc, ref = found
    p50, p99 = diagnostics.force_error_percentiles(acc, ref, (50, 99))
    return LiveAccuracy(p50, p99, len(targets), (time.perf_counter() - t0) * 1e3)
