"""Run under mpirun by tests/test_parallel_mpi.py: a Plummer sphere on the parallel engine.

argv: backend n steps out.npz [shrink]. Rank 0 writes the forces after loading, the energies before
and after the steps, the final state and the per-phase times.
"""
import sys

import numpy as np

from galaxyview.engines.parallel.decompose import owners, particle_keys
from galaxyview.engines.parallel.engine import (COMMANDS, ParallelEngine, _engines, serve,
                                                stop_serving)
from galaxyview.engines.parallel.mpi import Comm
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

backend, n, steps, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
shrink = len(sys.argv) > 5 and sys.argv[5] == "shrink"  # GPU ranks: rebuild mid-run


def _shrink_cells(key, comm, data):
    """(a command every rank serves) An eighth of the cells the tree arrays hold: the next
    build overflows and is made again in grown arrays, its LETs exported after the walk."""
    rank = _engines[key]
    rank.buf.cell_cap = max(64, rank.buf.cell_cap // 8)
    return rank.buf.cell_cap


COMMANDS["shrink_cells"] = _shrink_cells
comm = Comm(timeout=120)
if comm.rank != 0:
    sys.exit(serve(comm))
try:
    params = Params(theta=0.5, dt=1 / 64, eps=0.05)
    engine = ParallelEngine(backend, params, comm=comm)
    engine.load(plummer_sphere(n, np.random.default_rng(7)))
    acc, pot = engine.accelerations()
    interactions = [engine.stats.pp, engine.stats.pc]  # the load's evaluation, all ranks
    e0 = engine.energies()
    engine.step(1)  # GPU ranks: the load's splitters (by count) made anew by measured cost
    first_cuts = engine.stats.figures.get("decompose_cuts", -1.0)
    if shrink:
        engine._call("shrink_cells", None)
    engine.step(steps - 1)
    moved = engine.stats.figures.get("moved_out", -1.0)  # the last step's leavers (GPU ranks)
    device_path = engine.stats.figures.get("moved_device", -1.0)  # 1: through CUDA IPC
    balance = [engine.stats.figures.get(k, -1.0) for k in
               ("imbalance", "particles_spread", "mpi_wait", "interactions_spread")]
    rank_particles = [r.get("particles", -1.0) for r in engine.rank_ms]
    # each rank's interactions of the last step, and all ranks' (the step's stats)
    rank_interactions = [r.get("interactions", -1.0) for r in engine.rank_ms]
    step_interactions = engine.stats.pp + engine.stats.pc
    # each rank's particles outside its domain after the steps (at the last force evaluation)
    rank0 = _engines[engine._key]
    outside = [int(np.sum(owners(particle_keys(part[1].astype(np.float32), rank0.cube),
                                 rank0.cuts) != r))
               for r, part in enumerate(engine._call("state", None, False))
               if getattr(rank0, "cube", None) is not None]
    # the last step's p-p of all walks, and of the LET walks (a rank's figure is a particle's)
    let_pp = [engine.stats.pp, sum(r.get("let_pp", -1.0) * r.get("particles", 0.0)
                                   for r in engine.rank_ms)]
    let_in = [engine.stats.figures.get(k, -1.0) for k in
              ("let_peer_copy", "let_upload", "let_particles_in")]  # the last step's LETs
    e1 = engine.energies()
    state = engine.state()
    acc1, _ = engine.accelerations()
    np.savez(out, acc=acc, pot=pot, e0=[e0.kinetic, e0.potential], e1=[e1.kinetic, e1.potential],
             pos=state.pos, vel=state.vel, acc1=acc1, time=engine.time, steps=engine.steps_done,
             ms=[engine.stats.timings_ms.get(k, -1) for k in
                 ("decompose", "exchange", "let_build", "walk", "let_comm", "let_walk",
                  "integrate")],
             counts=[len(a) for a in [engine.rank_ms]], moved=moved,
             device_path=device_path, balance=balance, rank_particles=rank_particles, let_in=let_in,
             interactions=interactions, let_pp=let_pp, outside=outside,
             first_cuts=first_cuts, rank_interactions=rank_interactions,
             step_interactions=step_interactions,
             builds=getattr(_engines[engine._key], "_sorts", -1))  # rank 0's tree builds
    engine.close()
finally:
    stop_serving(comm)
