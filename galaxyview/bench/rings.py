"""`galaxyview bench rings`: a ring scene's step by phase (gravity with ghost
boxes, collision search, collision resolve, integration) at several N, and the same patch in
REBOUND (its tree gravity with ghost boxes and tree collisions, SEI, shear-periodic box) on
this machine's CPU cores, for the speed-up."""
from __future__ import annotations

import ctypes
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from galaxyview.engines import create_engine
from galaxyview.model.scene import load_scene

GRAVITY = ("keys_sort", "build", "multipoles", "walk")


@dataclass
class RingRow:
    n: int
    phases_ms: dict  # gravity, collide_search, collide_resolve, integrate (medians)
    step_ms: float
    collisions_per_step: float
    rebound_ms: float | None = None  # REBOUND's step (median), None where not timed
    rebound_note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        return self.rebound_ms / self.step_ms if self.rebound_ms else None

    def as_dict(self) -> dict:
        return {**asdict(self), "speedup": self.speedup}


def ring_state(scene_name: str, n: int):
    scene = load_scene(scene_name)
    state = scene.build(n)
    return scene, state, state.meta["sheet"]


def time_engine(kind: str, scene, state, sheet, steps: int, warmup: int, device: int = 0):
    """(median phases ms, median step ms, mean collisions a step, device name)."""
    params = scene.params.with_(sheet=sheet)
    engine, _ = create_engine(kind, params, device=device)
    try:
        engine.load(state)
        engine.step(warmup)
        rows, hits = [], []
        for _ in range(steps):
            engine.step(1)
            t = engine.stats.timings_ms
            rows.append({"gravity": sum(t.get(k, 0.0) for k in GRAVITY),
                         "collide_search": t.get("collide_search", t.get("collide", 0.0)),
                         "collide_resolve": t.get("collide_resolve", 0.0),
                         "integrate": t.get("integrate", 0.0)})
            hits.append(engine.stats.collisions)
        phases = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
        step = float(np.median([sum(r.values()) for r in rows]))
        return phases, step, float(np.mean(hits)), engine.device_name
    finally:
        engine.close()


def time_rebound(scene, state, sheet, steps: int) -> tuple[float | None, str]:
    """REBOUND's median step (ms) on the same patch, or (None, why not)."""
    try:
        import rebound
    except ImportError:
        return None, "rebound is not installed (pip install rebound)"
    p = scene.params
    threads = rebound_threads(rebound)
    sim = rebound.Simulation()
    sim.integrator = "sei"
    sim.OMEGA = sheet.omega
    sim.G = p.G
    sim.opening_angle2 = p.theta ** 2
    sim.softening = p.eps
    sim.collision_resolve = "hardsphere"
    sim.boundary = "shear"
    ratio = sheet.ly / sheet.lx
    if abs(ratio - round(ratio)) > 1e-9:
        return None, "REBOUND needs Ly a whole multiple of Lx"
    sim.root_size = sheet.lx
    sim.N_root_x, sim.N_root_y, sim.N_root_z = 1, int(round(ratio)), 1
    sim.N_ghost_x = sim.N_ghost_y = 1
    sim.dt = p.dt
    v_c = sheet.v_c
    if sheet.restitution == "constant":
        sim.coefficient_of_restitution = lambda _s, v: sheet.eps_n
    else:
        sim.coefficient_of_restitution = lambda _s, v: min(1.0, (abs(v) / v_c) ** -0.234) \
            if abs(v) > v_c else 1.0
    # N placeholders, then the state in one copy (millions of particles), then the trees
    blank = rebound.Particle(m=1.0)
    for _ in range(state.n):
        sim.add(blank)
    sim.set_serialized_particle_data(
        xyz=np.ascontiguousarray(state.pos, np.float64).ravel(),
        vxvyvz=np.ascontiguousarray(state.vel, np.float64).ravel(),
        m=state.mass.astype(np.float64), r=state.radius.astype(np.float64))
    sim.gravity = "tree" if sheet.self_gravity else "none"
    sim.collision = "tree"
    sim.steps(1)  # the first step builds the tree
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        sim.steps(1)
        times.append(1e3 * (time.perf_counter() - t0))
    note = f"REBOUND {rebound.__version__}" + (f", {threads} OpenMP threads" if threads else
                                               ", built without OpenMP: one core")
    return float(np.median(times)), note


def rebound_threads(rebound) -> int:
    """Make REBOUND use every core where its library has OpenMP; the threads (0: no OpenMP)."""
    try:
        ctypes.CDLL(rebound.clibrebound._name).omp_get_max_threads  # noqa: B018
    except (AttributeError, OSError):
        return 0
    threads = os.cpu_count() or 1
    rebound.omp_set_num_threads(threads)
    return threads


def bench_rings(scene_name: str, ns, kind: str, steps: int, warmup: int, rebound_steps: int,
                rebound_max: int, device: int = 0, progress=None) -> tuple[list[RingRow], str]:
    rows, name = [], ""
    for n in ns:
        scene, state, sheet = ring_state(scene_name, n)
        phases, step, hits, name = time_engine(kind, scene, state, sheet, steps, warmup, device)
        row = RingRow(n, phases, step, hits)
        if n <= rebound_max and rebound_steps:
            row.rebound_ms, row.rebound_note = time_rebound(scene, state, sheet, rebound_steps)
        else:
            row.rebound_note = f"REBOUND not timed above N = {rebound_max:,}"
        rows.append(row)
        if progress:
            progress(1)
    return rows, name
