"""`galaxyview bench`: per-phase step timings on a Plummer sphere (or a scene), compared with
Bonsai.

Timings are the engine's own per-phase figures (CUDA events on the GPU, perf_counter on the CPU),
taken after warm-up steps; medians over the timed steps.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from galaxyview.bench.reference import bonsai_ratios, step_medians, walk_tflops
from galaxyview.engines import create_engine
from galaxyview.engines.cpu.threads import count as cpu_threads
from galaxyview.model.ics.plummer import PlummerParts
from galaxyview.model.params import Params


@dataclass
class BenchRow:
    n: int
    theta: float
    phases_ms: dict
    step_ms: float
    build_ms: float  # keys_sort + build + multipoles
    pp_per_particle: float
    pc_per_particle: float
    walk_tflops: float
    particles_per_s: float
    device_bytes_per_particle: float | None = None
    bonsai: dict | None = field(default=None)
    figures: dict = field(default_factory=dict)  # StepStats.figures, medians

    def as_dict(self) -> dict:
        return asdict(self)


def bench_one(backend: str, n: int, theta: float, steps: int = 5, warmup: int = 2,
              eps: float = 0.05, dt: float = 1.0 / 16, seed: int = 1,
              device: int = 0, scene=None) -> tuple[BenchRow, str]:
    """One row: a Plummer sphere (eps, dt), or `scene` (a Scene: its n particles and
    parameters) at this theta."""
    params = Params(eps=eps, dt=dt) if scene is None else scene.params
    engine, _ = create_engine(backend, params.with_(theta=theta), device=device)
    try:
        # made where it runs (each process its share) where the model is made in parts
        maker = PlummerParts(n, seed) if scene is None else scene.maker(n)
        if maker is not None:
            engine.load_made(maker, cpu_threads())
        else:
            engine.load(scene.build(n))
        figures: dict = {}
        phases, pp_m, pc_m = step_medians(engine, steps, warmup, figures)
        step = float(sum(phases.values()))
        build = phases["keys_sort"] + phases["build"] + phases["multipoles"]
        tflops = walk_tflops(pp_m, pc_m, n, phases["walk"])
        mem = engine.device_memory_bytes()
        row = BenchRow(n, theta, phases, step, build, pp_m, pc_m, tflops,
                       n / (step / 1e3) if step > 0 else 0.0,
                       mem / n if mem is not None else None, figures=figures)
        if engine.on_gpu:
            row.bonsai = bonsai_ratios(n, theta, phases["walk"], build, step)
        return row, engine.device_name
    finally:
        engine.close()
