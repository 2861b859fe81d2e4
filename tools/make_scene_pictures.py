"""Pictures of the shipped scenes for the docs: initial and later state, x-y and x-z projections.

Each scene is built, evolved with an engine to a later time and drawn as a 2 x 2 panel
(rows: start and later time; columns: face-on x-y and edge-on x-z) of projected surface
density, log-scaled, coloured by component (disk blue-white, bulge orange, halo faint violet,
satellites pale green, star clusters white; black holes as red dots). Written to docs/scenes/.

  python tools/make_scene_pictures.py --backend gpu               # every scene, GPU N
  python tools/make_scene_pictures.py milky-way --backend cpu --n 20000
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from galaxyview.engines import create_engine
from galaxyview.errors import GalaxyviewError
from galaxyview.model.scene import load_scene, shipped_scenes
from galaxyview.model.state import Component

OUT = Path(__file__).resolve().parent.parent / "docs" / "scenes"
PANEL = 480
RED, TEXT = 254, 255  # palette entries of the black-hole markers and the labels
TINT = {Component.DISK: (0.55, 0.75, 1.0), Component.BULGE: (1.0, 0.75, 0.4),
        Component.HALO: (0.35, 0.25, 0.5), Component.SATELLITE: (0.5, 1.0, 0.6),
        Component.STAR: (1.0, 1.0, 1.0)}
DIM = {Component.HALO: 0.03, Component.SATELLITE: 0.08}  # dark matter: a fainter glow


def later_time(scene, state) -> float:
    """Default 'later' time in N-body units: well past the first passage for encounters, two
    disk rotations for a galaxy, 1 Gyr for the swarm, a few dynamical times otherwise."""
    if scene.model == "encounter":
        return 2.2 * max(state.meta["t_pericentre"])
    if scene.model == "disk_galaxy":
        return 2.0 * _period(scene)
    if scene.model == "swarm":
        return scene.units.time(1000.0) if scene.units else 200.0
    if scene.model == "cold_collapse":
        return 3.0
    return 20.0


def _period(scene) -> float:
    config = scene.config
    eq = config.equilibrium()
    x = np.linspace(0.0, 10.0, 100001)
    r_half = config.disk.scale_length * float(np.interp(0.5, 1.0 - (1.0 + x) * np.exp(-x), x))
    return 2.0 * math.pi * r_half / float(eq.circular_velocity(r_half))


def extent(state) -> float:
    """Half-width of the view: about the 97th percentile radius of the luminous particles."""
    lum = state.component != Component.HALO
    pos = state.pos[lum] if lum.any() else state.pos
    centre = np.median(pos, axis=0)
    r = np.linalg.norm(pos - centre, axis=1)
    return float(np.percentile(r, 97)) * 1.15


def render(state, axes: tuple[int, int], half: float, centre) -> np.ndarray:
    """RGB float image (PANEL, PANEL, 3) of the projection on `axes`."""
    img = np.zeros((PANEL, PANEL, 3))
    edges = np.linspace(-half, half, PANEL + 1)
    a, b = axes
    for comp, tint in TINT.items():
        sel = state.component == comp
        if not sel.any():
            continue
        p = state.pos[sel].astype(float) - centre
        h, _, _ = np.histogram2d(p[:, b], p[:, a], bins=(edges, edges),
                                 weights=state.mass[sel].astype(float))
        img += h[::-1, :, None] * np.array(tint) * DIM.get(comp, 1.0)
    return img


def tone_map(images: list[np.ndarray]) -> list[np.ndarray]:
    """Common log scale for a set of panels: 8-bit RGB."""
    peak = max(float(np.percentile(im[im > 0], 99.7)) if (im > 0).any() else 1.0
               for im in images)
    out = []
    for im in images:
        v = np.log1p(im / peak * 1000.0) / math.log1p(1000.0)
        out.append((np.clip(v, 0, 1) * 255).astype(np.uint8))
    return out


def picture(scene_name: str, backend: str, n: int | None, later: float | None,
            out: Path = OUT) -> Path:
    scene = load_scene(scene_name)
    engine, why = create_engine(backend, scene.params)
    state = scene.build(n, "gpu" if engine.on_gpu else "cpu")
    if later is None:
        later = later_time(scene, state)
    steps = max(1, round(later / scene.params.dt))
    t0 = time.perf_counter()
    engine.load(state)
    engine.step(steps)
    final = engine.state()
    seconds = time.perf_counter() - t0
    half = extent(state)
    unit = scene.units.time_myr if scene.units else None
    panels, labels = [], []
    for s in (state, final):
        lum = s.component != Component.HALO
        centre = (s.mass[lum].astype(float) @ s.pos[lum].astype(float) / s.mass[lum].sum()
                  if lum.any() else np.zeros(3))
        t = f"t = {s.time * unit:.0f} Myr" if unit else f"t = {s.time:.2f}"
        for axes, name in (((0, 1), "x-y"), ((0, 2), "x-z")):
            panels.append((render(s, axes, half, centre), s, axes, centre))
            labels.append(f"{t}   {name}")
    rgb = tone_map([p[0] for p in panels])
    sheet = Image.new("RGB", (2 * PANEL, 2 * PANEL + 24), (0, 0, 0))
    for k, img in enumerate(rgb):
        sheet.paste(Image.fromarray(img), ((k % 2) * PANEL, 24 + (k // 2) * PANEL))
    # 254 colours for the panels (half the file size, no visible loss), two for the overlays
    sheet = sheet.quantize(colors=254, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    sheet.putpalette(sheet.getpalette()[:254 * 3] + [255, 60, 60, 230, 230, 230])
    draw = ImageDraw.Draw(sheet)
    for k, (_, s, axes, centre) in enumerate(panels):
        x0, y0 = (k % 2) * PANEL, 24 + (k // 2) * PANEL
        _black_holes(draw, s, axes, centre, half, x0, y0)
        draw.text((x0 + 8, y0 + 6), labels[k], fill=TEXT)
    size = f"{2 * half * (scene.units.length_kpc if scene.units else 1):.0f}"
    draw.text((8, 5), f"{scene.name}: N = {state.n}, box {size} "
              f"{'kpc' if scene.units else 'units'}; {why}", fill=TEXT)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{scene_name}.png"
    sheet.save(path, optimize=True)
    print(f"{path}: {steps} steps in {seconds:.0f} s ({why})", flush=True)
    return path


def _black_holes(draw, s, axes, centre, half, x0, y0) -> None:
    for p in s.pos[s.component == Component.BLACK_HOLE].astype(float) - centre:
        u = (p[axes[0]] + half) / (2 * half) * PANEL
        v = (half - p[axes[1]]) / (2 * half) * PANEL
        if 0 <= u < PANEL and 0 <= v < PANEL:
            draw.ellipse((x0 + u - 3, y0 + v - 3, x0 + u + 3, y0 + v + 3), fill=RED)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("scenes", nargs="*", help="scene names (all shipped scenes)")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "gpu"))
    p.add_argument("--n", type=int, default=None, help="particles (the scene's n per backend)")
    p.add_argument("--later", type=float, default=None, help="later time, N-body units")
    p.add_argument("--out", type=Path, default=OUT, help="folder for the PNGs (docs/scenes)")
    args = p.parse_args(argv)
    try:
        names = args.scenes or [name for name, _, _ in shipped_scenes()]
        for name in names:
            picture(name, args.backend, args.n, args.later, args.out)
    except GalaxyviewError as exc:
        print(f"make_scene_pictures: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
