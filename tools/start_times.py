"""Start times of the CPU engine's entry points, with an empty numba cache and a filled one.

The command line (`galaxyview run antennae`), the window (`galaxyview antennae --screenshot`,
under xvfb-run where there is no display) and the Python API (the README's example), each
first with an empty cache (NUMBA_CACHE_DIR: a new temporary folder) and then again with the
cache it filled; then all three in turn on one new cache (the first compiles, the others
should load its kernels). Wall seconds of the whole process; "compiled" when it said
"compiling the CPU engine". HOME and the XDG folders are temporary too (no user file is
touched). The load average is printed: the machine may be shared.

  python tools/start_times.py                 # every entry point, about 5 min on 2 cores
  python tools/start_times.py --only cli api  # some of them
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

N = 20000
API = """
import galaxyview as gv

with gv.open("antennae", backend="cpu", n=20_000) as sim:
    sim.run(until=1.0)
    print(sim.time, sim.energies().total)
    sim.params = {"dt": 0.005}
    sim.save("antennae.h5")
snap = gv.load("antennae.h5")
print(snap.state.pos.shape, snap.params["dt"])
"""


def commands() -> dict:
    gv = [sys.executable, "-m", "galaxyview"]
    view = [*gv, "antennae", "--backend", "cpu", "--n", str(N), "--screenshot", "x.png",
            "--overwrite", "--frames", "5"]
    if not os.environ.get("DISPLAY") and shutil.which("xvfb-run"):
        view = ["xvfb-run", "-a", *view]
    return {"cli": [*gv, "run", "antennae", "--backend", "cpu", "--n", str(N), "--steps", "10"],
            "viewer": view, "api": [sys.executable, "-c", API]}


def timed(cmd, cache: str, work: str) -> tuple[float, bool, int]:
    """(wall s, whether it compiled, exit status) of cmd on numba cache `cache`."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "HOME": os.path.join(work, "home"),
           "XDG_CONFIG_HOME": os.path.join(work, "config"),
           "XDG_CACHE_HOME": os.path.join(work, "cache")}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    here = tempfile.mkdtemp(dir=work)  # the run's own folder (its outputs)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=here, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        sys.stderr.write(done.stderr[-2000:])
    return wall, "compiling the CPU engine" in done.stderr, done.returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=("cli", "viewer", "api"),
                        default=["cli", "viewer", "api"])
    args = parser.parse_args(argv)
    cmds = commands()
    print(f"load average {os.getloadavg()[0]:.1f} at the start; {os.cpu_count()} CPUs; "
          f"N = {N}")
    print(f"{'entry point':<12} {'cache':<22} {'wall s':>7}  compiled")
    with tempfile.TemporaryDirectory(prefix="start-times-") as work:
        for name in args.only:
            cache = tempfile.mkdtemp(prefix=f"numba-{name}-", dir=work)
            for label in ("empty", "its own, filled"):
                wall, compiled, rc = timed(cmds[name], cache, work)
                print(f"{name:<12} {label:<22} {wall:7.1f}  {'yes' if compiled else 'no'}"
                      f"{'' if rc == 0 else f'  (exit status {rc})'}", flush=True)
        cache = tempfile.mkdtemp(prefix="numba-shared-", dir=work)
        for i, name in enumerate(args.only):
            wall, compiled, rc = timed(cmds[name], cache, work)
            label = "empty" if i == 0 else f"filled by {'+'.join(args.only[:i])}"
            print(f"{name:<12} {label:<22} {wall:7.1f}  {'yes' if compiled else 'no'}"
                  f"{'' if rc == 0 else f'  (exit status {rc})'}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
