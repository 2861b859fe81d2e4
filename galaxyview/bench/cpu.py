"""`galaxyview bench --backend cpu --compare`: the CPU engines and pytreegrav at equal accuracy.

Per (N, theta) on a Plummer sphere (eps 0.05): the median relative force error of the compiled
engine against float64 direct summation on a sample of particles, and the force time (a step's
phases less the integration, median of steps) of the compiled engine and of the numpy engine
(the same tree, so the same error). pytreegrav (numba, monopole + quadrupole, parallel) runs
at several opening angles with its own softening (cubic spline of support 2.8 eps) against its
own exact sum; its time at the compiled engine's error is read off log-log interpolation.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from time import perf_counter

import numpy as np

from galaxyview.bench.reference import step_medians
from galaxyview.engines import create_engine
from galaxyview.errors import GalaxyviewError
from galaxyview.jobs.accuracy import direct_reference
from galaxyview.model.diagnostics import relative_force_errors
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

EPS = 0.05
SPLINE_PER_PLUMMER = 2.8  # a cubic spline of support 2.8 eps is about Plummer eps
PTG_THETAS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2)


@dataclass
class CompareRow:
    n: int
    theta: float
    error: float  # median relative force error of the compiled engine (= the numpy engine's)
    cpu_ms: float
    reference_ms: float | None
    pytreegrav_ms: float | None  # at the same median error
    pytreegrav_theta: float | None
    pytreegrav_curve: list  # (theta, median error, ms) measured

    @property
    def vs_reference(self) -> float | None:
        return self.reference_ms / self.cpu_ms if self.reference_ms else None

    @property
    def vs_pytreegrav(self) -> float | None:
        return self.pytreegrav_ms / self.cpu_ms if self.pytreegrav_ms else None

    def as_dict(self) -> dict:
        return {**asdict(self), "vs_reference": self.vs_reference,
                "vs_pytreegrav": self.vs_pytreegrav}


def _engine_ms(backend: str, state, theta: float, steps: int):
    """Median force ms over `steps` steps, and the accelerations at the initial state."""
    engine, _ = create_engine(backend, Params(theta=theta, eps=EPS, dt=1.0 / 64))
    try:
        engine.load(state)
        acc, _ = engine.accelerations()
        phases, _, _ = step_medians(engine, steps, 1)
        return sum(v for k, v in phases.items() if k != "integrate"), acc
    finally:
        engine.close()


def _pytreegrav_curve(state, sample, repeats: int = 3) -> list:
    import pytreegrav

    pos, m = state.pos.astype(np.float64), state.mass.astype(np.float64)
    h = np.full(len(m), SPLINE_PER_PLUMMER * EPS)
    exact = pytreegrav.AccelTarget(pos[sample], pos, m, h[sample], h, method="bruteforce",
                                   parallel=True)
    curve = []
    for theta in PTG_THETAS:
        times = []
        for _ in range(repeats + 1):  # the first call compiles
            t0 = perf_counter()
            acc = pytreegrav.Accel(pos, m, h, theta=theta, parallel=True, quadrupole=True,
                                   method="tree")
            times.append(1e3 * (perf_counter() - t0))
        err = float(np.median(relative_force_errors(acc[sample], exact)))
        curve.append((theta, err, float(np.median(times[1:]))))
    return curve


def at_error(curve: list, error: float) -> tuple[float | None, float | None]:
    """(theta, ms) at `error` by log-log interpolation between the curve's points; (None,
    None) outside the measured range."""
    pts = sorted((e, t, ms) for t, e, ms in curve)
    for (e0, t0, m0), (e1, t1, m1) in zip(pts, pts[1:]):
        if e0 <= error <= e1:
            f = np.log(error / e0) / np.log(e1 / e0) if e1 > e0 else 0.0
            return t0 + f * (t1 - t0), float(np.exp(np.log(m0) + f * np.log(m1 / m0)))
    return None, None


def compare(ns, thetas, steps: int = 5, sample: int = 1024, reference: bool = True,
            progress=None) -> list[CompareRow]:
    try:
        import pytreegrav  # noqa: F401
    except ImportError:
        raise GalaxyviewError("the comparison needs pytreegrav: pip install pytreegrav "
                              "(or galaxyview[bench])") from None
    rows = []
    for n in ns:
        state = plummer_sphere(n, np.random.default_rng(1))
        pick = np.sort(np.random.default_rng(0).choice(n, min(sample, n), replace=False))
        a_ref, _ = direct_reference(state, EPS, pick)
        curve = _pytreegrav_curve(state, pick)
        for theta in thetas:
            cpu_ms, acc = _engine_ms("cpu", state, theta, steps)
            ref_ms = _engine_ms("reference", state, theta, max(1, steps // 3))[0] \
                if reference else None
            err = float(np.median(relative_force_errors(acc[pick], a_ref)))
            ptg_theta, ptg_ms = at_error(curve, err)
            rows.append(CompareRow(n, theta, err, cpu_ms, ref_ms, ptg_ms, ptg_theta, curve))
            if progress:
                progress(1)
    return rows
