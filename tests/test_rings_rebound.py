"""The CPU ring modules against REBOUND (Rein & Liu 2012): the same non-self-gravitating ring
patch (box, N, radii, Bridges restitution, SEI time step, initial state) run 20 orbits by both;
the viscous equilibrium's velocity dispersion, thickness and collision frequency agree."""
import numpy as np
import pytest

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.model.ring_stats import ring_stats
from galaxyview.model.scene import load_scene

rebound = pytest.importorskip("rebound")

N, ORBITS, STEPS_PER_ORBIT, AVERAGE_FROM = 1000, 20, 100, 10


def rebound_run(state, sheet, dt):
    sim = rebound.Simulation()
    sim.integrator = "sei"
    sim.OMEGA = sheet.omega
    sim.gravity = "none"
    sim.collision = "tree"
    sim.collision_resolve = "hardsphere"
    sim.boundary = "shear"
    sim.root_size = sheet.lx  # a cube: z reaches far beyond the layer
    sim.N_root_x = sim.N_root_y = sim.N_root_z = 1
    sim.N_ghost_x = sim.N_ghost_y = 1
    sim.dt = dt
    sim.minimum_collision_velocity = 0.0
    sim.coefficient_of_restitution = lambda _sim, v: float(sheet.restitution_of(np.array(v)))
    pos, vel = state.pos.astype(float), state.vel.astype(float)
    for k in range(state.n):
        sim.add(m=float(state.mass[k]), r=float(state.radius[k]), x=pos[k, 0], y=pos[k, 1],
                z=pos[k, 2], vx=vel[k, 0], vy=vel[k, 1], vz=vel[k, 2])
    samples, hits = [], 0
    for orbit in range(ORBITS):
        n0 = sim.collisions_log_n
        sim.steps(STEPS_PER_ORBIT)
        if orbit >= AVERAGE_FROM:
            xv = np.zeros((sim.N, 6))
            sim.serialize_particle_data(xyzvxvyvz=xv)
            samples.append(ring_stats(xv[:, :3], xv[:, 3:], state.mass, state.radius, sheet,
                                      sim.t))
            hits += sim.collisions_log_n - n0
    assert sim.N == N
    return samples, hits


def galaxyview_run(state, params):
    eng = CPUEngine(params, gravity="direct")
    eng.load(state)
    s, samples, hits = eng.system, [], 0
    for orbit in range(ORBITS):
        got = 0
        for _ in range(STEPS_PER_ORBIT):
            eng.step(1)
            got += eng.stats.collisions
        if orbit >= AVERAGE_FROM:
            samples.append(ring_stats(s.pos, s.vel, s.mass, s.radius, params.sheet, eng.time))
            hits += got
    return samples, hits


def summary(samples, hits):
    """Mean sigma_x, sigma_y, sigma_z, H over the sampled orbits; collisions per particle per
    orbit."""
    sig = np.mean([s.dispersion for s in samples], axis=0)
    h = np.mean([s.thickness for s in samples])
    return dict(sigma_x=sig[0], sigma_y=sig[1], sigma_z=sig[2], thickness=h,
                collision_rate=2 * hits / N / len(samples))


@pytest.mark.slow
def test_equilibrium_ring_agrees_with_rebound():
    scene = load_scene("ring-equilibrium")
    state = scene.build(N)
    sheet = state.meta["sheet"]
    dt = sheet.period / STEPS_PER_ORBIT
    params = scene.params.with_(sheet=sheet, dt=dt)
    ours = summary(*galaxyview_run(state, params))
    ref = summary(*rebound_run(state, sheet, dt))
    print("\n".join(f"{k:15s} galaxyview {ours[k]:.4g}  rebound {ref[k]:.4g}  "
                    f"{ours[k] / ref[k] - 1:+.1%}" for k in ours))
    for k in ("sigma_x", "sigma_y", "sigma_z", "thickness"):
        assert ours[k] == pytest.approx(ref[k], rel=0.10), k
    assert ours["collision_rate"] == pytest.approx(ref["collision_rate"], rel=0.15)
    # a real equilibrium: the dispersion is some Omega r, not the initial value or a runaway
    assert 1 < ours["sigma_x"] / (sheet.omega * 1.0) < 20


def test_bench_times_galaxyview_and_rebound_on_the_same_patch(capsys):
    """`galaxyview bench --scene ring-equilibrium` times both codes' steps on one patch."""
    from galaxyview.cli.main import main

    assert main(["bench", "--scene", "ring-equilibrium", "--backend", "cpu", "--n", "600",
                 "--steps", "2", "--warmup", "1", "--rebound-steps", "2", "--json"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    row = out["rows"][0]
    assert row["n"] == 600 and row["step_ms"] > 0 and row["rebound_ms"] > 0
    assert row["speedup"] == pytest.approx(row["rebound_ms"] / row["step_ms"])
    assert "REBOUND" in row["rebound_note"]
