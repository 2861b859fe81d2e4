"""`galaxyview bench --backend cpu --compare`: the CPU engines and pytreegrav at equal accuracy.

Per (N, theta) on a Plummer sphere (eps 0.05): the median relative force error of the compiled
engine against float64 direct summation on a sample of particles, and the force time (a step's
phases less the integration, median of steps) of the compiled engine and of the numpy engine
(the same tree, so the same error). pytreegrav (numba, monopole + quadrupole, parallel) runs
with its own softening (cubic spline of support 2.8 eps) against its own exact sum, at opening
angles that bracket each of the compiled engine's errors (about two per theta); its time at
that error is read off log-log interpolation (the median of 3 timings; one where an
evaluation takes over 2 s). A line says at once what is measured and about
how long it takes, another after each case (progress.note).
"""
from __future__ import annotations

import os
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
from galaxyview.progress import note

EPS = 0.05
SPLINE_PER_PLUMMER = 2.8  # a cubic spline of support 2.8 eps is about Plummer eps
PTG_THETA_RANGE = (0.2, 1.2)  # pytreegrav's opening angles are searched within these
PTG_STEP = 0.1  # between the two first ones (about the compiled engine's theta), and onwards
ONE_TIMING_MS = 2000  # a pytreegrav evaluation longer than this is timed once, not repeated
PTG_COMPILE_S = 60  # pytreegrav's tree is a numba jitclass, compiled in every process (2 cores)
# seconds per particle of one force evaluation on 2 cores at theta 0.5 (the estimate only)
PER_PARTICLE_S = {"cpu": 2e-6, "reference": 3e-5, "pytreegrav": 4e-5}


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


def _engine_ms(backend: str, state, theta: float, steps: int, warmup: int = 1):
    """Median force ms over `steps` steps after `warmup`, and the accelerations at the initial
    state."""
    engine, _ = create_engine(backend, Params(theta=theta, eps=EPS, dt=1.0 / 64))
    try:
        engine.load(state)
        acc, _ = engine.accelerations()
        phases, _, _ = step_medians(engine, steps, warmup)
        return sum(v for k, v in phases.items() if k != "integrate"), acc
    finally:
        engine.close()


class _Pytreegrav:
    """pytreegrav on one state: its own exact forces on the sample, then (theta, median error,
    ms) at each opening angle asked, measured once."""

    def __init__(self, state, sample, repeats: int = 3):
        import pytreegrav

        self.ptg, self.sample, self.repeats = pytreegrav, sample, repeats
        self.pos, self.m = state.pos.astype(np.float64), state.mass.astype(np.float64)
        self.h = np.full(len(self.m), SPLINE_PER_PLUMMER * EPS)
        self.exact = pytreegrav.AccelTarget(self.pos[sample], self.pos, self.m, self.h[sample],
                                            self.h, method="bruteforce", parallel=True)
        self.points = {}

    def _accel(self, theta: float, count: int | None = None):
        k = slice(None, count)
        return self.ptg.Accel(self.pos[k], self.m[k], self.h[k], theta=theta, parallel=True,
                              quadrupole=True, method="tree")

    def compile(self) -> None:
        """Its tree code compiled (a few particles: the same types)."""
        self._accel(0.7, 64)

    def at(self, theta: float) -> tuple[float, float]:
        theta = round(theta, 3)
        if theta not in self.points:
            times = []
            while len(times) < self.repeats and not (times and times[0] > ONE_TIMING_MS):
                t0 = perf_counter()
                acc = self._accel(theta)
                times.append(1e3 * (perf_counter() - t0))
            err = float(np.median(relative_force_errors(acc[self.sample], self.exact)))
            self.points[theta] = (err, float(np.median(times)))
        return self.points[theta]

    def bracket(self, error: float, theta: float) -> None:
        """Measure at angles about `theta` until two bracket `error` (or the range ends)."""
        lo, hi = PTG_THETA_RANGE
        below = above = None  # the largest theta under the error, the smallest over it
        t = min(max(theta - PTG_STEP / 2, lo), hi)
        while below is None or above is None:
            e, _ = self.at(t)
            if e <= error:
                below = t
                t = t + PTG_STEP
            else:
                above = t
                t = t - PTG_STEP
            if (below is None and t < lo - 1e-9) or (above is None and t > hi + 1e-9):
                return

    def curve(self) -> list:
        return [(t, e, ms) for t, (e, ms) in sorted(self.points.items())]


def at_error(curve: list, error: float) -> tuple[float | None, float | None]:
    """(theta, ms) at `error` by log-log interpolation between the curve's points; (None,
    None) outside the measured range."""
    pts = sorted((e, t, ms) for t, e, ms in curve)
    for (e0, t0, m0), (e1, t1, m1) in zip(pts, pts[1:]):
        if e0 <= error <= e1:
            f = np.log(error / e0) / np.log(e1 / e0) if e1 > e0 else 0.0
            return t0 + f * (t1 - t0), float(np.exp(np.log(m0) + f * np.log(m1 / m0)))
    return None, None


def estimate_s(ns, thetas, steps: int, sample: int, reference: bool = True) -> float:
    """About how long compare() takes on 2 cores, in seconds (PER_PARTICLE_S: rough)."""
    per = PER_PARTICLE_S
    total = PTG_COMPILE_S
    for n in ns:
        total += 2 * 3e-9 * n * sample  # the two direct sums on the sample
        for _ in thetas:
            ptg = per["pytreegrav"] * n
            total += (steps + 2) * per["cpu"] * n + 2 * (3 if ptg < 2 else 1) * ptg
            total += 2 * per["reference"] * n if reference else 0
    return total


def _about(seconds: float) -> str:
    return f"about {max(1, round(seconds / 60))} min" if seconds >= 90 else \
        f"about {max(1, round(seconds))} s"


def _busy() -> str:
    """A note where other work keeps the CPUs busy (the times then grow)."""
    cpus = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return f"; the machine is busy (load {load:.1f} on {cpus} CPUs): longer" \
        if load > cpus / 2 else ""


def compare(ns, thetas, steps: int = 5, sample: int = 1024, reference: bool = True,
            progress=None) -> list[CompareRow]:
    """A CompareRow per (N, theta); progress(1) after each."""
    import galaxyview.numba_setup  # noqa: F401 (before pytreegrav sets numba's CPU target up)

    try:
        import pytreegrav  # noqa: F401
    except ImportError:
        raise GalaxyviewError("the comparison needs pytreegrav: pip install pytreegrav "
                              "(or galaxyview[bench])") from None
    engines = "cpu and reference" if reference else "cpu"
    took = _about(estimate_s(ns, thetas, steps, sample, reference))
    note(f"comparing the {engines} engines and pytreegrav at equal median force error: "
         f"Plummer N = {', '.join(map(str, ns))}, theta {', '.join(f'{t:g}' for t in thetas)}; "
         f"errors on {sample} particles; {took} on 2 idle cores (pytreegrav compiles its tree "
         f"first: {_about(PTG_COMPILE_S)}){_busy()}")
    rows = []
    compiled = False
    for n in ns:
        t0 = perf_counter()
        state = plummer_sphere(n, np.random.default_rng(1))
        pick = np.sort(np.random.default_rng(0).choice(n, min(sample, n), replace=False))
        a_ref, _ = direct_reference(state, EPS, pick)
        if not compiled:
            note("pytreegrav: compiling its direct sum and tree code (numba, in every process)")
            t1 = perf_counter()
        ptg = _Pytreegrav(state, pick)
        if not compiled:
            ptg.compile()
            note(f"pytreegrav: compiled in {perf_counter() - t1:.0f} s")
            compiled = True
        for theta in thetas:
            cpu_ms, acc = _engine_ms("cpu", state, theta, steps)
            ref_ms = _engine_ms("reference", state, theta, max(1, steps // 3), 0)[0] \
                if reference else None
            err = float(np.median(relative_force_errors(acc[pick], a_ref)))
            ptg.bracket(err, theta)
            ptg_theta, ptg_ms = at_error(ptg.curve(), err)
            rows.append(CompareRow(n, theta, err, cpu_ms, ref_ms, ptg_ms, ptg_theta, []))
            ref = f", reference {ref_ms:.1f} ms" if ref_ms else ""
            other = f"pytreegrav {ptg_ms:.1f} ms at theta {ptg_theta:.2f}" if ptg_ms else \
                "pytreegrav: error out of its range"
            note(f"N {n} theta {theta:g}: error {err:.2e}, cpu {cpu_ms:.1f} ms{ref}, {other} "
                 f"({perf_counter() - t0:.0f} s)")
            if progress:
                progress(1)
        for row in rows:
            if row.n == n:
                row.pytreegrav_curve = ptg.curve()
    return rows
