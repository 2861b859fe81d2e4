"""Reference figures the engines are measured against.

Bonsai built from its public source for sm_90 and run on an H200 (Plummer sphere, eps 0.05,
dt 1/16, tree rebuilt every step, shared time step): (N, theta) -> (walk ms, build ms, step ms),
where build is sort + tree construction + multipoles. Flops follow Bonsai's convention.
"""

FLOPS_PP = 23  # per particle-particle interaction
FLOPS_PC = 65  # per particle-cell interaction (monopole + quadrupole)

BONSAI_H200 = {
    (1 << 20, 0.4): (14.35, 1.89, 16.5),
    (1 << 20, 0.75): (4.31, 1.93, 6.5),
    (1 << 22, 0.4): (61.7, 5.18, 67.5),
    (1 << 22, 0.75): (18.0, 5.17, 23.8),
    (1 << 24, 0.4): (262.7, 21.1, 286.0),
    (1 << 24, 0.75): (78.4, 21.1, 101.6),
}


def bonsai_ratios(n: int, theta: float, walk_ms: float, build_ms: float,
                  step_ms: float) -> dict | None:
    """Bonsai's figures for (n, theta) and ours as ratios of them; None where none exist."""
    ref = BONSAI_H200.get((n, theta))
    if ref is None:
        return None
    walk, build, step = ref
    return {"walk_ms": walk, "build_ms": build, "step_ms": step, "walk_ratio": walk_ms / walk,
            "build_ratio": build_ms / build, "step_ratio": step_ms / step}


def step_medians(engine, steps: int, warmup: int,
                 figures: dict | None = None) -> tuple[dict, float, float]:
    """Step `engine` warmup + steps times; medians over the timed steps of each phase's ms
    (engines.base.PHASES, then any further phases the engine reports: the parallel engine's
    decomposition, exchange and LET phases) and of the p-p and p-c interactions per
    particle. figures (a dict): filled with the medians of the engine's other figures
    (StepStats.figures: the parallel engine's LET sizes and phase parts), `step_mean_ms`,
    the mean step (the medians leave out rare steps: the parallel engine's new splitters),
    and `wall_ms`, the median of each step's wall clock around `engine.step(1)` (the phases'
    sum leaves out the host's time between them: a parallel engine's commands and replies)."""
    from time import perf_counter

    import numpy as np

    from galaxyview.engines.base import PHASES

    engine.step(warmup)
    samples = {p: [] for p in PHASES}
    pp, pc, others, totals, walls = [], [], {}, [], []
    for _ in range(steps):
        t0 = perf_counter()
        engine.step(1)
        walls.append((perf_counter() - t0) * 1e3)
        totals.append(sum(engine.stats.timings_ms.values()))
        for p in PHASES:
            samples[p].append(engine.stats.timings_ms.get(p, 0.0))
        for p, ms in engine.stats.timings_ms.items():
            if p not in PHASES:
                samples.setdefault(p, []).append(ms)
        for k, v in engine.stats.figures.items():
            others.setdefault(k, []).append(v)
        pp.append(engine.stats.pp_per_particle)
        pc.append(engine.stats.pc_per_particle)
    phases = {p: float(np.median(v)) for p, v in samples.items()}
    if figures is not None:
        figures.update({k: float(np.median(v)) for k, v in others.items()})
        figures["step_mean_ms"] = float(np.mean(totals)) if totals else 0.0
        figures["wall_ms"] = float(np.median(walls)) if walls else 0.0
    return phases, float(np.median(pp)), float(np.median(pc))


def walk_tflops(pp_per_particle: float, pc_per_particle: float, n: int, walk_ms: float) -> float:
    """Walk speed by Bonsai's flop count."""
    if walk_ms <= 0:
        return 0.0
    return (FLOPS_PP * pp_per_particle + FLOPS_PC * pc_per_particle) * n / (walk_ms / 1e3) / 1e12
