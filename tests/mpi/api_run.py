"""Run under mpirun by tests/test_parallel_mpi.py: the rest of the Engine interface over
several processes, against the one-process engine computed on rank 0. Prints one JSON line."""
import json
import sys

import numpy as np

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.parallel.engine import ParallelEngine, serve, stop_serving
from galaxyview.engines.parallel.mpi import Comm
from galaxyview.errors import EngineError
from galaxyview.model.ics.plummer import PlummerParts, plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.scene import load_scene
from galaxyview.model.state import Component
from galaxyview.movie.recorder import follow_target
from galaxyview.simulation import open_simulation

comm = Comm(timeout=120)
if comm.rank != 0:
    sys.exit(serve(comm))
try:
    state = plummer_sphere(2000, np.random.default_rng(3))
    params = Params(theta=0.5, dt=1 / 64, eps=0.05)
    par, one = ParallelEngine("reference", params, comm=comm), CPUEngine(params)
    par.load(state)
    one.load(state)
    out = {}
    par.step(3)
    one.step(3)
    par.set_params(theta=0.8)
    one.set_params(theta=0.8)
    rel = lambda a, b: float(np.median(np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)))
    out["theta_changed_err"] = rel(par.accelerations()[0], one.accelerations()[0])
    mask = state.pos[:, 0] > 0
    out["com_diff"] = float(np.abs(par.centre_of_mass(mask) - one.centre_of_mass(mask)).max())
    boxes = par.tree_boxes(0, 3)
    out["boxes"] = int(len(boxes))
    exact = par.exact_state()
    again = ParallelEngine("reference", params.with_(theta=0.8), comm=comm)
    again.load_exact(exact)
    out["restart_pos_equal"] = bool(np.array_equal(again.exact_state().pos, exact.pos))
    out["restart_energy_diff"] = abs(again.energies().total - par.energies().total)
    out["restart_steps"] = again.steps_done
    again.close()
    acc, ref = par.sample_forces(np.arange(0, 2000, 50))
    out["sample_err"] = rel(acc, ref)
    big = PlummerParts(2_300_000, seed=5)  # worker processes spawned from an MPI process
    a, b = big.part(100, 2_200_000), big.part(100, 2_200_000, workers=4)
    out["workers_equal"] = bool(np.array_equal(a.pos, b.pos) and np.array_equal(a.vel, b.vel))
    del a, b
    maker = PlummerParts(3000, seed=11)  # made by every process, its share
    made = ParallelEngine("reference", params, comm=comm)
    made.load_made(maker)
    whole = maker.whole()
    out["made_pos_diff"] = float(np.abs(made.state().pos - whole.pos).max())
    out["made_mass_equal"] = bool(np.array_equal(made.state().mass, whole.mass))
    one_made = CPUEngine(params)
    one_made.load(whole)
    out["made_force_err"] = rel(made.accelerations()[0], one_made.accelerations()[0])
    made.close()
    merger = load_scene("mw-andromeda").maker(3000)  # galaxies made in parts
    made = ParallelEngine("reference", params, comm=comm)
    made.load_made(merger)
    got, whole = made.state(), merger.whole()
    out["merger_pos_diff"] = float(np.abs(got.pos - whole.pos).max())
    out["merger_same_components"] = bool(np.array_equal(got.component, whole.component) and
                                         np.array_equal(got.galaxy, whole.galaxy))
    out["merger_galaxies"] = got.meta.get("galaxies")
    made.close()
    # a simulation opened from a scene: made in parts where it runs, no whole copy on rank 0
    sim = open_simulation("mw-andromeda", "reference", 6000, dt=1 / 64)
    whole = load_scene("mw-andromeda").build(6000)  # the one-process engine's particles
    start = sim.state()
    out["sim_made"] = [sim.initial is None, sim.maker is not None, sim.engine.distributed,
                       sim.initial_sample.n, sim.initial_sample.meta.get("galaxies")]
    out["sim_pos_diff"] = float(np.abs(start.pos - whole.pos).max())
    sim.step(2)
    moved = float(np.abs(sim.state().pos - start.pos).max())
    sim.reset()  # made anew, in parts
    out["sim_reset"] = [moved, float(np.abs(sim.state().pos - start.pos).max()), sim.time]
    core = whole.galaxy == 0
    core &= np.isin(whole.component, (Component.BULGE, Component.BLACK_HOLE))
    want = np.average(start.pos[core].astype(np.float64), axis=0, weights=start.mass[core])
    out["sim_follow_err"] = float(np.abs(follow_target(sim)() - want).max())
    sim.close()
    t_before = par.time
    par.set_params(dt=1e6, eps=1e-6)  # the next step flings particles out: NaN or inf
    try:
        par.step(5)
        out["failed"] = None
    except EngineError as exc:
        out["failed"] = str(exc)
    out["time_kept"] = par.time == t_before
    out["state_finite"] = bool(np.isfinite(par.state().pos).all())
    par.close()
    print(json.dumps(out), flush=True)
finally:
    stop_serving(comm)
