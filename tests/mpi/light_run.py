"""Run under mpirun by tests/test_parallel_mpi.py: the light image of a view made by the
processes (each splats its own particles, the images are summed on rank 0) against the host
splat of the whole gathered state, and frames of the offscreen renderer without a gather.

argv: backend n [images.npz]: the summed images kept there. Prints one JSON line.
"""
import json
import sys

import numpy as np

from galaxyview.engines.parallel.engine import ParallelEngine, _engines, serve, stop_serving
from galaxyview.engines.parallel.mpi import Comm
from galaxyview.light import particle_points, particle_values, splat
from galaxyview.engines.parallel.decompose import particle_keys
from galaxyview.model.density import key_density
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import Selection
from galaxyview.render.camera import Camera
from galaxyview.render.host_splat import light_view
from galaxyview.render.look import Look, colour_lut, mode_code
from galaxyview.render.sources import framing_positions

backend, n = sys.argv[1], int(sys.argv[2])
keep = sys.argv[3] if len(sys.argv) > 3 else None
comm = Comm(timeout=120)
if comm.rank != 0:
    sys.exit(serve(comm))
try:
    rng = np.random.default_rng(5)
    state = plummer_sphere(n, rng)
    state.component[:] = rng.integers(0, 5, n)  # disk, bulge, halo, black hole, satellite
    state.galaxy[:] = rng.integers(0, 3, n)
    engine = ParallelEngine(backend, Params(theta=0.6, dt=1 / 64, eps=0.05), comm=comm)
    engine.load(state)
    engine.step(2)
    gathers = []
    gather = engine._gather
    engine._gather = lambda exact: gathers.append(exact) or gather(exact)

    whole = engine.state()
    _, pot = engine.accelerations()
    rank0 = _engines[engine._key]
    cube = rank0.cube  # the decomposition's: the density's cells (engines/parallel/density.py)
    keys = particle_keys(whole.pos.astype(np.float32), cube)
    density = np.log10(key_density(keys, whole.mass, float(cube[1])))
    made = engine.colour_values("density")
    sample = engine.colour_values("density", 1000)
    density_err = [float(np.abs(made - density).max()), float(np.mean(made != density)),
                   len(np.unique(density)), len(sample), bool(np.isin(sample, made).all())]
    ranges = {}  # a colour map's ends from the ranks' samples against the whole state's
    for mode in ("speed", "potential", "vz"):
        full = particle_values(mode, whole.pos, whole.vel, whole.mass, whole.galaxy, pot)
        part = engine.colour_values(mode, 2000)
        ends = np.percentile(full, [1, 50, 99])
        ranges[mode] = [len(part), float(np.abs(np.percentile(part, [1, 50, 99]) - ends).max()
                                         / (ends[2] - ends[0]))]
    ids, part = engine.sample_state(1000)  # the ranks' strided rows, in the loaded order
    sampled = [len(ids), bool(np.all(np.diff(ids) > 0)),
               bool(np.array_equal(part.pos, whole.pos[ids])
                    and np.array_equal(part.vel, whole.vel[ids])
                    and np.array_equal(part.component, whole.component[ids])
                    and np.array_equal(part.galaxy, whole.galaxy[ids]))]
    core = Selection(1, (1, 3))  # the second galaxy's bulge and black holes, found by each rank
    pick = core.mask(whole.component, whole.galaxy)
    want = np.average(whole.pos[pick].astype(np.float64), axis=0, weights=whole.mass[pick])
    com_err = float(np.abs(engine.centre_of_mass(core) - want).max())
    errors, images = {}, {}
    for size, azimuth, distance in (((160, 96), 30.0, 6.0), ((97, 131), -70.0, 3.0)):
        camera = Camera()
        camera.fit(whole.pos)
        camera.orbit(azimuth, 20.0)
        camera.distance = distance
        for mode in ("component", "galaxy", "speed", "potential", "density"):
            values = density if mode == "density" else \
                particle_values(mode, whole.pos, whole.vel, whole.mass, whole.galaxy, pot)
            lo, hi = float(np.percentile(values, 1)), float(np.percentile(values, 99))
            look = Look(point_size=4.0)
            view = light_view(camera, look, size, (mode, mode_code(mode), (lo, hi),
                                                    colour_lut("viridis")), engine.n)
            want = splat(view, particle_points(whole.pos, whole.component, values))
            got = engine.light(view)
            images[f"{size}-{mode}"] = got
            scale = float(want.max())
            errors[f"{size}-{mode}"] = [float(np.abs(got - want).max() / scale), scale,
                                        list(got.shape)]
    before = len(gathers)

    from galaxyview.render.offscreen import OffscreenRenderer

    frames = []
    with OffscreenRenderer(160, 96, Look(colour_mode="speed")) as r:
        r.attach(engine)  # framed on a sample of the state: no copy of it all
        at_attach = len(gathers) - before
        fit = Camera()
        fit.fit(framing_positions(whole.pos, whole.component))
        fit_err = [float(np.linalg.norm(r.camera.centre - fit.centre) / fit.distance),
                   float(abs(r.camera.distance / fit.distance - 1))]
        before = len(gathers)
        for i in range(4):
            if i:
                engine.step(1)
                r.camera.orbit(5.0)
            frames.append(r.draw())
            if i == 0:
                first_frame = len(gathers) - before  # the speed range: once a mode
        per_frame = len(gathers) - before - first_frame
        path = r.path
        on_device = getattr(r.source, "_device", None) is not None  # the sum copied on the GPU
        if on_device:  # the same frame with the sum through the host (rgba16f texture)
            r.source._on_device = False
            r.source._key = None
            host_frame = r.draw()
            diff = np.abs(host_frame.astype(np.int16) - frames[-1].astype(np.int16))
            frame_diff = [float(diff.mean()), int(diff.max())]
        else:
            frame_diff = None
    with OffscreenRenderer(160, 96, Look(colour_mode="density")) as r:  # made by the ranks
        r.attach(engine)
        before = len(gathers)
        r.draw()
        engine.step(1)
        r.draw()
        density_frames = len(gathers) - before
    if keep:
        np.savez(keep, **images)
    peer_path = getattr(_engines[engine._key], "_peer_path", None)  # GPU ranks: device or host
    print(json.dumps(dict(errors=errors, at_attach=at_attach, first_frame=first_frame,
                          peer_path=peer_path, on_device=on_device, frame_diff=frame_diff,
                          later_frames=per_frame, path=path, density=density_err,
                          ranges=ranges, sampled=sampled, com_err=com_err, fit_err=fit_err,
                          density_frames=density_frames,
                          strays=getattr(getattr(rank0, "_density", None), "strays_out", None),
                          lit=[float((f.max(axis=2) > 60).mean()) for f in frames])))
    engine.close()
finally:
    stop_serving(comm)
