"""Renderer benchmark on the GPU machine (EGL, no Qt): rendering + interop alone on Plummer
spheres, and whole frames (one engine step + rendering) on a scene; medians, JSON lines.

    galaxyview bench render --scene antennae --n 1048576 \
        --render-n 1048576 4194304 --frames 100 --sweep --png frame.png --png-steps 600
"""
from __future__ import annotations

import json
import statistics
import time

import numpy as np

from galaxyview.engines import create_engine
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.render.offscreen import OffscreenRenderer
from galaxyview.light.device import SHUFFLE_STRIDE
from galaxyview.render.sources import HostSource


def _median_ms(fn, frames: int) -> float:
    times = []
    for _ in range(frames):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


SWEEP = [  # (light by CUDA splat or GL sprites, vertex order stride, sprite size)
    ("splat", SHUFFLE_STRIDE, 3.0), ("splat", 1, 3.0), ("splat", SHUFFLE_STRIDE, 6.0),
    ("sprites", SHUFFLE_STRIDE, 3.0), ("sprites", 1, 3.0)]


def sweep(renderer: OffscreenRenderer, engine, frames: int, report=None) -> list:
    """Render + interop time against the light path, vertex order and sprite size; each row
    also to report(row) as it is measured."""
    renderer.attach(engine)
    pr, rows = renderer._renderer, []
    for path, stride, size in SWEEP:
        renderer.source.stride = stride
        pr.light_source = renderer.source if path == "splat" else None
        renderer.look.point_size = size
        renderer.render_frame()
        ms = _median_ms(renderer.render_frame, frames)
        rows.append({"n": engine.n, "light": path, "order": "engine" if stride == 1 else
                     "shuffled", "point_size": size, "ms": round(ms, 3)})
        if report:
            report(rows[-1])
    pr.light_source, renderer.look.point_size = renderer.source, 3.0
    renderer.source.stride = SHUFFLE_STRIDE
    return rows


def render_only(renderer: OffscreenRenderer, engine, n: int, frames: int) -> dict:
    """Interop + draw per frame with the engine standing still; host upload for comparison."""
    renderer.attach(engine)
    renderer.render_frame()  # warm-up: buffer creation and registration
    ms = _median_ms(renderer.render_frame, frames)
    parts = dict(renderer.timings)
    host = HostSource(engine, renderer._renderer)
    upload_ms = _median_ms(host.refresh, max(3, frames // 5))
    host.close()
    renderer.attach(engine)  # back to the interop path
    return {"n": n, "light": "splat" if renderer.source.splatter else "sprites",
            "splat_error": renderer.source.splat_error, "render_interop_ms": round(ms, 3),
            "interop_ms": round(parts["upload"], 3), "draw_ms": round(parts["render"], 3),
            "host_copy_upload_ms": round(upload_ms, 3), "path": renderer.path}


def whole_frames(renderer: OffscreenRenderer, engine, frames: int) -> dict:
    renderer.attach(engine)
    for _ in range(3):  # warm-up
        engine.step(1)
        renderer.render_frame()
    step_ms, t0 = [], time.perf_counter()
    for _ in range(frames):
        t1 = time.perf_counter()
        engine.step(1)
        step_ms.append((time.perf_counter() - t1) * 1e3)
        renderer.render_frame()
    wall = time.perf_counter() - t0
    return {"n": engine.n, "frames": frames, "fps": round(frames / wall, 1),
            "frame_ms": round(wall / frames * 1e3, 3),
            "step_ms_median": round(statistics.median(step_ms), 3),
            "render_ms_last": round(renderer.timings["render"], 3),
            "interop_ms_last": round(renderer.timings["upload"], 3)}


def main(args, out_line) -> dict:
    """`galaxyview bench render` (args: scene, n, theta, render_n, frames, size (w, h), sweep,
    png, png_steps): a JSON line a result to out_line(line) as it comes; the figures."""
    w, h = args.size
    out = {"size": [w, h]}
    renderer = OffscreenRenderer(w, h)
    out["render_only"] = []
    for n in args.render_n:
        engine, _ = create_engine("gpu", Params(theta=args.theta))
        engine.load(plummer_sphere(n, np.random.default_rng(1)))
        out["render_only"].append(render_only(renderer, engine, n, args.frames))
        if args.sweep:
            out.setdefault("sweep", []).extend(sweep(
                renderer, engine, args.frames // 2, lambda row: out_line(json.dumps(row))))
        renderer.detach()
        engine.close()
        out_line(json.dumps(out["render_only"][-1]))
    if args.scene and args.n:
        from galaxyview.simulation import open_simulation

        sim = open_simulation(args.scene, "gpu", args.n, theta=args.theta)
        out["whole"] = {"scene": args.scene, "theta": args.theta,
                        "device": sim.engine.device_name,
                        **whole_frames(renderer, sim.engine, args.frames)}
        out_line(json.dumps(out["whole"]))
        if args.png:
            import imageio.v3 as iio

            left = args.png_steps
            while left > 0:
                sim.engine.step(min(left, 50))
                left -= 50
            renderer.camera.fit()
            iio.imwrite(args.png, renderer.draw())
            out["png"] = {"path": args.png, "time": sim.engine.time,
                          "time_myr": sim.time_myr, "steps": sim.engine.steps_done}
        renderer.detach()
        sim.close()
    renderer.close()
    return out
