"""Evolve an isolated disk galaxy and check that its disk stays a disk.

Prints, over time, the disk's half-mass radius, its vertical scale height (from the median |z|
of the disk particles between 1 and 3 scale lengths, as z0 of a sech^2 profile), the m = 2
Fourier amplitude A2 = |sum m exp(2i phi)| / sum m of the disk inside 2 scale lengths (the bar
region) and of the whole disk, and the tilt of the disk's spin (degrees), all measured about
the disk's centre in the plane normal to its spin; it ends with the figures the issue asks for:
  half-mass radius change < 10% and scale-height growth < 30% after 4 rotation periods at the
  disk's half-mass radius; no bar (A2 of the inner disk < 0.2) over the first 2 rotations.

  python tools/disk_stability.py --n 20000 --backend cpu          # CPU engine, ~15 min
  python tools/disk_stability.py --n 1048576 --backend gpu        # GPU engine
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from galaxyview.engines import create_engine
from galaxyview.errors import GalaxyviewError
from galaxyview.model.ics.galaxy import GalaxyConfig
from galaxyview.model.scene import load_scene
from galaxyview.model.state import Component

MEDIAN_ABS_SECH2 = math.atanh(0.5)  # median |z| / z0 of a sech^2(z / z0) profile


def disk_figures(state, h: float) -> dict:
    """Half-mass radius, scale height and m = 2 amplitudes of the disk, measured about its
    centre in the plane normal to its spin (so that a tilt of the whole disk does not count)."""
    disk = state.component == Component.DISK
    pos, vel = state.pos[disk].astype(float), state.vel[disk].astype(float)
    mass = state.mass[disk].astype(float)
    centre, bulk = mass @ pos / mass.sum(), mass @ vel / mass.sum()
    for _ in range(5):  # recentre on the inner disk
        inner = np.linalg.norm(pos - centre, axis=1) < 3.0 * h
        centre, bulk = (mass[inner] @ pos[inner] / mass[inner].sum(),
                        mass[inner] @ vel[inner] / mass[inner].sum())
    spin = (mass[inner, None] * np.cross(pos[inner] - centre, vel[inner] - bulk)).sum(axis=0)
    x, y, z = ((pos - centre) @ _frame(spin / np.linalg.norm(spin)).T).T
    R = np.hypot(x, y)
    phi = np.arctan2(y, x)
    band = (R > h) & (R < 3.0 * h)
    wave = mass * np.exp(2j * phi)
    inner = R < 2.0 * h
    return {
        "r_half": float(np.median(R)),
        "z0": float(np.median(np.abs(z[band])) / MEDIAN_ABS_SECH2),
        "a2_inner": float(abs(wave[inner].sum()) / mass[inner].sum()),
        "a2_disk": float(abs(wave.sum()) / mass.sum()),
        "tilt_deg": float(np.degrees(np.arccos(np.clip(spin[2] / np.linalg.norm(spin), -1, 1)))),
    }


def _frame(n: np.ndarray) -> np.ndarray:
    """Rows: two unit vectors in the plane normal to n, then n."""
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(n, a)
    e1 /= np.linalg.norm(e1)
    return np.array([e1, np.cross(n, e1), n])


def rotation_period(config: GalaxyConfig) -> tuple[float, float]:
    """(half-mass radius of the model disk, circular orbit period there), N-body units."""
    eq = config.equilibrium()
    x = np.linspace(0.0, 10.0, 100001)
    r_half = config.disk.scale_length * float(np.interp(0.5, 1.0 - (1.0 + x) * np.exp(-x), x))
    return r_half, 2.0 * math.pi * r_half / float(eq.circular_velocity(r_half))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scene", default="milky-way", help="a disk_galaxy scene (milky-way)")
    p.add_argument("--n", type=int, default=None, help="particles (the scene's n for the backend)")
    p.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "auto"))
    p.add_argument("--rotations", type=float, default=4.0, help="rotation periods to run (4)")
    p.add_argument("--outputs", type=int, default=4, help="reports per rotation period (4)")
    p.add_argument("--dt", type=float, default=None, help="time step (the scene's)")
    p.add_argument("--theta", type=float, default=None, help="opening angle (the scene's)")
    p.add_argument("--json", metavar="FILE", help="also write the time series as JSON")
    args = p.parse_args(argv)
    try:
        return run(args)
    except GalaxyviewError as exc:
        print(f"disk_stability: {exc}", file=sys.stderr)
        return 2


def run(args) -> int:
    scene = load_scene(args.scene)
    if scene.model != "disk_galaxy" or scene.config.disk is None:
        raise GalaxyviewError(f"{args.scene} is not an isolated disk galaxy scene")
    config = scene.config
    params = scene.params.with_(dt=args.dt, theta=args.theta)
    engine, why = create_engine(args.backend, params)
    state = scene.build(args.n, "gpu" if engine.on_gpu else "cpu")
    h = config.disk.scale_length
    r_half, period = rotation_period(config)
    unit_myr = scene.units.time_myr if scene.units else 1.0
    steps_per_output = max(1, round(period / args.outputs / params.dt))
    outputs = math.ceil(args.rotations * args.outputs)
    print(f"{args.scene}: N = {state.n} ({int((state.component == Component.DISK).sum())} disk), "
          f"{why}; theta {params.theta}, dt {params.dt:g}, eps {params.eps:g}")
    print(f"disk half-mass radius {r_half:.3f}, rotation period there {period:.2f} "
          f"({period * unit_myr:.0f} Myr); {outputs * steps_per_output} steps")
    engine.load(state)
    e0 = engine.energies().total
    first = disk_figures(state, h)
    rows = []
    print(f"{'t/T':>5} {'Myr':>6} {'r_half':>7} {'d%':>6} {'z0':>6} {'d%':>6} "
          f"{'A2 in':>6} {'A2 all':>6} {'tilt':>5} {'dE/E':>9} {'s/step':>6}")
    start = time.perf_counter()
    for k in range(outputs + 1):
        if k:
            engine.step(steps_per_output)
        f = disk_figures(engine.state(), h)
        f.update(t=engine.time, rotations=engine.time / period,
                 d_r_half=f["r_half"] / first["r_half"] - 1.0, d_z0=f["z0"] / first["z0"] - 1.0,
                 d_energy=(engine.energies().total - e0) / abs(e0))
        rows.append(f)
        per_step = (time.perf_counter() - start) / max(1, k * steps_per_output)
        print(f"{f['rotations']:5.2f} {f['t'] * unit_myr:6.0f} {f['r_half']:7.3f} "
              f"{100 * f['d_r_half']:6.1f} {f['z0']:6.3f} {100 * f['d_z0']:6.1f} "
              f"{f['a2_inner']:6.3f} {f['a2_disk']:6.3f} {f['tilt_deg']:5.1f} "
              f"{f['d_energy']:9.2e} {per_step:6.2f}",
              flush=True)
    last = rows[-1]
    a2_max = max(r["a2_inner"] for r in rows if r["rotations"] <= 2.0 + 1e-9)
    verdict = {
        "half_mass_radius_change": last["d_r_half"],
        "scale_height_growth": last["d_z0"],
        "a2_inner_max_first_2_rotations": a2_max,
        "ok": abs(last["d_r_half"]) < 0.10 and last["d_z0"] < 0.30 and a2_max < 0.2,
    }
    print(f"after {last['rotations']:.2f} rotations: half-mass radius "
          f"{100 * last['d_r_half']:+.1f}% (limit 10%), scale height {100 * last['d_z0']:+.1f}% (limit 30%); max A2 of the "
          f"inner disk over the first 2 rotations {a2_max:.3f} (bar if > 0.2): "
          f"{'PASS' if verdict['ok'] else 'FAIL'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"scene": args.scene, "n": state.n, "engine": why, "rows": rows,
                       "verdict": verdict}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
