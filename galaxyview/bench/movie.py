"""Recording benchmark: what each stage costs alone, then whole recordings.

    galaxyview bench movie mw-andromeda --n 1048576 --frames 300 --out DIR

Stages alone: engine steps; render + pixel read-back; the encoder fed frames from memory
(per x264 preset). Then whole recordings (steps, draw, caption, encode; from the first step to
the renamed file), with the steps overlapped with read-back and without. JSON to DIR/bench.json.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

from galaxyview.movie.encoder import MovieWriter
from galaxyview.movie.recorder import RecordOptions, record_simulation


def _per_second(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def stage_costs(sim, renderer, frames: int, presets, out: Path, size) -> dict:
    engine = sim.engine
    engine.step(2)  # warm-up: kernels compiled, buffers sized
    t = time.perf_counter()
    engine.step(20)
    step_ms = (time.perf_counter() - t) / 20 * 1e3
    renderer.draw()
    t = time.perf_counter()
    images = []
    for i in range(30):
        renderer.render_frame()
        images.append(renderer.read())
    draw_ms = (time.perf_counter() - t) / 30 * 1e3
    result = {"step_ms": step_ms, "phases_ms": dict(engine.stats.timings_ms),
              "render_read_ms": draw_ms, "renderer_last_ms": dict(renderer.timings),
              "encode_fps": {}}
    for preset in presets:
        t = time.perf_counter()
        writer = MovieWriter(out / f"encode-{preset}.mp4", 30, size, overwrite=True,
                             preset=preset)
        for i in range(frames):
            writer.add_frame(images[i % len(images)])
        path = writer.close()
        result["encode_fps"][preset] = _per_second(frames, time.perf_counter() - t)
        result.setdefault("encode_bytes", {})[preset] = path.stat().st_size
        path.unlink()
    return result


def main(args, out_line) -> dict:
    """`galaxyview bench movie` (args: scene, n, frames, size (w, h), theta, backend, device,
    presets, record_presets, out): its lines to out_line(line) as they come; the report (also
    written to out/bench.json)."""
    from galaxyview.render.offscreen import OffscreenRenderer
    from galaxyview.simulation import open_simulation

    size = tuple(args.size)
    out = Path(args.out)
    t = time.perf_counter()
    sim = open_simulation(args.scene, args.backend, args.n, theta=args.theta, device=args.device)
    setup_s = time.perf_counter() - t
    report = {"scene": sim.name, "n": sim.engine.n, "engine": sim.why, "size": size,
              "frames": args.frames, "theta": sim.engine.params.theta, "setup_s": setup_s,
              "host": platform.node(), "records": []}
    out_line(f"{sim.name}: N = {sim.engine.n}, {sim.why}; set-up {setup_s:.1f} s")
    renderer = OffscreenRenderer(*size)
    try:
        renderer.attach(sim.engine)
        report["stages"] = stage_costs(sim, renderer, args.frames, args.presets, out, size)
        out_line(json.dumps(report["stages"], indent=1))
        for preset in args.record_presets:
            for overlap in (True, False):
                sim.reset()
                path = out / f"record-{preset}-{'overlap' if overlap else 'serial'}.mp4"
                options = RecordOptions(args.frames, 30, size, preset=preset, overlap=overlap,
                                        overwrite=True).validate()
                writer = MovieWriter(path, 30, size, overwrite=True, preset=preset,
                                     pixel_format="yuv420p")
                res = record_simulation(sim, writer, options, renderer=renderer,
                                        show_progress=False)
                row = {"preset": preset, "overlap": overlap, "frames": res.frames,
                       "wall_s": res.wall_s, "fps": res.fps, "bytes": path.stat().st_size,
                       "spent_ms_per_frame": {k: v / res.frames * 1e3
                                              for k, v in res.phases_s.items()}}
                report["records"].append(row)
                out_line(json.dumps(row))
                if overlap is False or preset != args.record_presets[0]:
                    path.unlink()
    finally:
        renderer.close()
        sim.close()
    (out / "bench.json").write_text(json.dumps(report, indent=1, default=float))
    best = max(report["records"], key=lambda r: r["fps"])
    out_line(f"best: {best['fps']:.1f} frames/s end to end ({best['preset']}, "
             f"overlap={best['overlap']}); {np.round(best['wall_s'], 2)} s for {best['frames']}")
    return report
