"""Evolve an isolated galaxy with a bulge cusp and a central black hole, and check that the cusp
holds (issue 46's equilibrium check of scenes/m31-cusp.toml).

Reports at t = 0, 25, 50, 100 Myr (--times), all about the bulge's centre (the centre of mass of
its particles within 1 kpc, found by shrinking spheres from the bulge's centre of mass):
  - the bulge's density in radial bins between 0.05 and 2 kpc against the initial, the largest
    relative change (and that of the innermost bin, 0.05-0.08 kpc);
  - the bulge's enclosed mass within 0.1, 0.3 and 1 kpc, relative to the initial;
  - the black hole's distance from the bulge's centre (pc), and its sphere of influence: the
    radius about it within which the stars (bulge and disk) weigh twice the hole;
  - the half-mass radii of bulge, disk and halo (3-D, about the centre);
  - |dE/E| of the whole system.

  python tools/cusp_equilibrium.py --n 20000                 # CPU engine (numba), scene's dt
  python tools/cusp_equilibrium.py --n 1048576 --backend gpu
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from galaxyview.engines import create_engine
from galaxyview.errors import GalaxyviewError
from galaxyview.model.scene import load_scene
from galaxyview.model.state import Component

BINS_KPC = np.geomspace(0.05, 2.0, 9)  # 8 logarithmic bins
ENCLOSED_KPC = (0.1, 0.3, 1.0)
PARTS = {"bulge": Component.BULGE, "disk": Component.DISK, "halo": Component.HALO}


def bulge_centre(pos: np.ndarray, mass: np.ndarray, last: float = 1.0) -> np.ndarray:
    """Centre of mass of the bulge particles within `last` (N-body length) of it, by spheres
    shrinking by 20% from the whole bulge's centre of mass (robust to a few escapers)."""
    centre = mass @ pos / mass.sum()
    radius = float(np.max(np.linalg.norm(pos - centre, axis=1)))
    while True:
        radius = max(0.8 * radius, last)
        inside = np.linalg.norm(pos - centre, axis=1) < radius
        if inside.sum() < 32:
            return centre
        centre = mass[inside] @ pos[inside] / mass[inside].sum()
        if radius == last:
            return centre


def cusp_figures(state, length_kpc: float = 1.0) -> dict:
    """The cusp's figures of a galaxy state (one galaxy; lengths in kpc via length_kpc, masses
    in N-body units)."""
    pos, mass, comp = state.pos.astype(float), state.mass.astype(float), state.component
    bulge = comp == Component.BULGE
    centre = bulge_centre(pos[bulge], mass[bulge], 1.0 / length_kpc)
    r = np.linalg.norm(pos - centre, axis=1) * length_kpc
    edges = BINS_KPC
    shell = 4.0 / 3.0 * np.pi * np.diff(edges ** 3)
    density = np.histogram(r[bulge], edges, weights=mass[bulge])[0] / shell
    hole = comp == Component.BLACK_HOLE
    out = {
        "density": density.tolist(),
        "enclosed": [float(mass[bulge & (r < x)].sum()) for x in ENCLOSED_KPC],
        "bh_offset_kpc": float(r[hole][0]) if hole.any() else float("nan"),
        "r_infl_kpc": _influence(pos, mass, comp) * length_kpc,
        "half_mass_kpc": {},
    }
    for name, code in PARTS.items():
        mine = comp == code
        if mine.any():
            out["half_mass_kpc"][name] = _half_mass_radius(r[mine], mass[mine])
    return out


def _influence(pos, mass, comp) -> float:
    """Radius about the black hole within which bulge and disk weigh twice the hole (nan
    without one)."""
    hole = comp == Component.BLACK_HOLE
    if not hole.any():
        return float("nan")
    stars = (comp == Component.BULGE) | (comp == Component.DISK)
    d = np.linalg.norm(pos[stars] - pos[hole][0], axis=1)
    order = np.argsort(d)
    cum = np.cumsum(mass[stars][order])
    return float(d[order][np.searchsorted(cum, 2.0 * mass[hole][0])])


def _half_mass_radius(r: np.ndarray, m: np.ndarray) -> float:
    order = np.argsort(r)
    cum = np.cumsum(m[order])
    return float(r[order][np.searchsorted(cum, 0.5 * cum[-1])])


def influence_radius(config) -> float:
    """Radius (N-body units) within which the model's stars (bulge and disk) weigh twice the
    black hole (the sphere of influence by mass); 0 without a black hole."""
    if config.black_hole <= 0:
        return 0.0
    r = np.geomspace(1e-5, 100.0, 20001) * config.bulge.scale
    stars = config.bulge.enclosed_mass(r) + (config.disk.cylindrical_mass(r) if config.disk
                                             else 0.0)
    return float(np.interp(2.0 * config.black_hole, stars, r))


def changes(first: dict, now: dict) -> dict:
    """Relative changes of `now` against `first` (density bins with particles at the start)."""
    d0, d1 = np.asarray(first["density"]), np.asarray(now["density"])
    ok = d0 > 0
    rel = np.where(ok, d1 / np.where(ok, d0, 1.0) - 1.0, 0.0)
    return {
        "density_max": float(np.max(np.abs(rel))),
        "density_inner": float(rel[0]),
        "enclosed": [b / a - 1.0 if a > 0 else float("nan")
                     for a, b in zip(first["enclosed"], now["enclosed"])],
        "r_infl": now["r_infl_kpc"] / first["r_infl_kpc"] - 1.0,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scene", default="m31-cusp", help="a disk_galaxy scene with a bulge "
                   "(m31-cusp)")
    p.add_argument("--n", type=int, default=None, help="particles (the scene's n for the backend)")
    p.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "reference", "auto"))
    p.add_argument("--times", type=float, nargs="+", default=[25.0, 50.0, 100.0],
                   help="report times in Myr (25 50 100)")
    p.add_argument("--dt", type=float, default=None, help="time step (the scene's)")
    p.add_argument("--theta", type=float, default=None, help="opening angle (the scene's)")
    p.add_argument("--integrator", default=None, help="physics module (the scene's)")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = p.parse_args(argv)
    try:
        return run(args)
    except GalaxyviewError as exc:
        print(f"cusp_equilibrium: {exc}", file=sys.stderr)
        return 2


def run(args) -> int:
    scene = load_scene(args.scene)
    if scene.model != "disk_galaxy" or scene.config.bulge is None or scene.units is None:
        raise GalaxyviewError(f"{args.scene} is not a galaxy scene with a bulge and [units]")
    params = scene.params.with_(dt=args.dt, theta=args.theta, integrator=args.integrator)
    engine, why = create_engine(args.backend, params)
    state = scene.build(args.n, "gpu" if engine.on_gpu else "cpu")
    kpc, myr = scene.units.length_kpc, scene.units.time_myr
    r_infl = influence_radius(scene.config) * kpc
    counts = {k: int((state.component == c).sum()) for k, c in PARTS.items()}
    print(f"{args.scene}: N = {state.n} {counts}, {why}; {params.integrator}, theta "
          f"{params.theta}, dt {params.dt:g} ({params.dt * myr * 1e3:.1f} kyr), eps "
          f"{params.eps * kpc * 1e3:g} pc; sphere of influence (stars = 2 M_bh) "
          f"{r_infl * 1e3:.0f} pc in the model")
    engine.load(state)
    e0 = engine.energies().total
    first = cusp_figures(state, kpc)
    print("bulge density bins (kpc): " + " ".join(f"{x:.3g}" for x in BINS_KPC))
    print(f"{'Myr':>5} {'rho max':>8} {'rho in':>7} {'M<0.1':>7} {'M<0.3':>7} {'M<1':>7} "
          f"{'BH pc':>6} {'r_infl pc':>9} {'r_half b/d/h kpc':>20} {'|dE/E|':>8} {'s/step':>6}")
    rows, start, done = [], time.perf_counter(), 0
    for t_myr in [0.0] + sorted(args.times):
        steps = round(t_myr / myr / params.dt) - done
        if steps > 0:
            engine.step(steps)
            done += steps
        now = cusp_figures(engine.state(), kpc)
        row = {"t_myr": engine.time * myr, **now, **changes(first, now),
               "d_energy": abs(engine.energies().total - e0) / abs(e0)}
        rows.append(row)
        half = "/".join(f"{now['half_mass_kpc'].get(k, float('nan')):.2f}" for k in PARTS)
        per_step = (time.perf_counter() - start) / max(1, done)
        print(f"{row['t_myr']:5.1f} {100 * row['density_max']:7.1f}% "
              f"{100 * row['density_inner']:+6.1f}% "
              + " ".join(f"{100 * x:+6.1f}%" for x in row["enclosed"])
              + f" {now['bh_offset_kpc'] * 1e3:6.1f} {now['r_infl_kpc'] * 1e3:9.1f} {half:>20} "
              f"{row['d_energy']:8.1e} {per_step:6.3f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"scene": args.scene, "n": state.n, "engine": why,
                       "dt": params.dt, "integrator": params.integrator, "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
