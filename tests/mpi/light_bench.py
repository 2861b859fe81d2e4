"""Timing, not a test (docs/parallel.md): ms per frame of the light through a gather of the
state (the host path: state(), vertices, splat on rank 0; up to 4M particles) against the
processes' splats summed on rank 0 (engine.light: an MPI Reduce, or on GPU ranks of one host
the images read device to device and added on rank 0's GPU), 1920x1080, a Plummer sphere.

    mpirun -n 2 python tests/mpi/light_bench.py N [repeats] [cpu|gpu]
"""
import json
import sys
import time

import numpy as np

from galaxyview.engines.parallel.engine import ParallelEngine, serve, stop_serving
from galaxyview.engines.parallel.mpi import Comm
from galaxyview.light import splat
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.render.camera import Camera
from galaxyview.render.host_splat import light_view
from galaxyview.render.look import Look, colour_lut, mode_code
from galaxyview.render.particles import host_vertices

n, repeats = int(float(sys.argv[1])), int(sys.argv[2]) if len(sys.argv) > 2 else 3
backend = sys.argv[3] if len(sys.argv) > 3 else "cpu"
comm = Comm()
if comm.rank != 0:
    sys.exit(serve(comm))
try:
    engine = ParallelEngine(backend, Params(theta=0.75, dt=1 / 64, eps=0.01), comm=comm)
    engine.load(plummer_sphere(n, np.random.default_rng(1)))
    t0 = time.perf_counter()
    engine.step(1)
    step_ms = 1e3 * (time.perf_counter() - t0)
    camera = Camera()
    camera.fit(engine.state().pos)
    view = light_view(camera, Look(), (1920, 1080), ("speed", mode_code("speed"), (0.0, 1.0),
                                                     colour_lut("viridis")), n)
    gather, reduce = [], []
    engine.light(view)  # warm-up: buffers, IPC handles
    for _ in range(repeats):
        t0 = time.perf_counter()
        if n <= 1 << 22:
            s = engine.state()
            v = host_vertices(s.pos, s.vel, s.component, None, s.radius)
            splat(view, v.view(np.float32).reshape(len(v), -1))
        t1 = time.perf_counter()
        engine.light(view)
        t2 = time.perf_counter()
        gather.append(1e3 * (t1 - t0))
        reduce.append(1e3 * (t2 - t1))
    print(json.dumps(dict(n=n, procs=comm.size, step_ms=round(step_ms),
                          gather_ms=(round(float(np.median(gather)), 1) if n <= 1 << 22
                                     else None),
                          reduce_ms=round(float(np.median(reduce)), 1))))
    engine.close()
finally:
    stop_serving(comm)
