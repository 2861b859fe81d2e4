"""Run under mpirun by tests/test_parallel_gpu.py: the density colouring made by the ranks
(engine.colour_values) against model/density.py's key_density of the whole gathered state in
the decomposition's cube, after steps (and the strays out of the domains, none since the
migration sends each particle where the step's drift takes it).

argv: backend n scene steps (scene: plummer, or a scene name made in parts). One JSON line.
"""
import json
import sys
import time

import numpy as np

from galaxyview.engines.parallel.decompose import particle_keys
from galaxyview.engines.parallel.engine import ParallelEngine, _engines, serve, stop_serving
from galaxyview.engines.parallel.mpi import Comm
from galaxyview.model.density import key_density
from galaxyview.model.ics.plummer import PlummerParts
from galaxyview.model.params import Params
from galaxyview.model.scene import load_scene

backend, n, scene, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
comm = Comm(timeout=240)
if comm.rank != 0:
    sys.exit(serve(comm))
try:
    if scene == "plummer":
        maker, params = PlummerParts(n, seed=3), Params(theta=0.6, dt=1 / 32, eps=0.01)
    else:
        found = load_scene(scene)
        maker, params = found.maker(n), found.params
    engine = ParallelEngine(backend, params, comm=comm)
    engine.load_made(maker)
    engine.step(steps)
    t0 = time.perf_counter()
    engine.colour_values("density", 1000)  # made on the ranks (a sample comes back)
    t1 = time.perf_counter()
    made = engine.colour_values("density")  # kept: no new evaluation; all gathered
    t2 = time.perf_counter()
    again = engine.colour_values("density")
    whole = engine.state()
    rank0 = _engines[engine._key]
    cube = rank0.cube
    want = np.log10(key_density(particle_keys(whole.pos, cube), whole.mass, float(cube[1])))
    diff = np.abs(made - want)
    part = getattr(rank0, "_density", None)  # GPU ranks: rank 0's strays
    strays, came = (part.strays_out, part.strays_in) if part else (0, 0)
    engine.step(1)
    t3 = time.perf_counter()
    engine.colour_values("density", 1000)  # made anew after the step
    t4 = time.perf_counter()
    made_ms = part.ms if part else None  # rank 0's making of them alone
    print(json.dumps(dict(
        max_err=float(diff.max()), off=int(np.sum(diff > 1e-4)), distinct=len(np.unique(want)),
        spread=float(np.percentile(want, 99) - np.percentile(want, 1)),
        same_again=bool(np.array_equal(made, again)), strays=strays, came=came,
        renewed=not np.array_equal(engine.colour_values("density"), made),
        ms=[1e3 * (t1 - t0), 1e3 * (t4 - t3)], made_ms=made_ms, gather_ms=1e3 * (t2 - t1))))
    engine.close()
finally:
    stop_serving(comm)
