"""The compiled CPU engine: the numpy engine's shell with compiled tree phases.

State, physics modules, checks and the last good state are CPUEngine's; the keys, cells,
groups, multipoles and the walk (build.py, walk.py), direct summation and the Hermite's block
steps (direct.py) run as numba kernels, compiled on first use and cached on disk (warm_up shows
progress when it compiles).
"""
from __future__ import annotations

import sys
import threading
from time import perf_counter

import numpy as np

from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.cpu import threads
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.cpu_numba import build, direct, jit, walk
from galaxyview.errors import EngineError
from galaxyview.interrupt import Noticed
from galaxyview.numba_setup import cache_misses

LOADING_AFTER_S = 2.0  # a cache load says "loading" when it takes longer than this
_warm = False


def warm_up(stream=None, announce_after: float | None = None) -> None:
    """Compile (or load from the disk cache) every kernel on a tiny tree, once per process.
    Whether it compiles is known after the first kernels (keys): numba's cache missed them.
    Compiling shows a progress line on `stream` (stderr) at once; a load that takes longer
    than announce_after seconds (LOADING_AFTER_S) a short "loading" line."""
    global _warm
    if _warm:
        return
    from tqdm import tqdm

    stream = stream or sys.stderr
    steps = ("keys", "cells", "multipoles", "walk", "direct")
    bar = None
    lock = threading.Lock()

    def announce(desc):
        nonlocal bar
        with lock:
            if bar is None:
                bar = tqdm(total=len(steps), desc=desc, unit="kernel", file=stream, leave=True)
                bar.update(done)

    wait = LOADING_AFTER_S if announce_after is None else announce_after
    loading = "loading the CPU engine's compiled kernels"
    timer = threading.Timer(wait, announce, (loading,))
    timer.daemon = True
    done = 0
    pos = np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32)
    mass = np.ones(64, np.float32)
    misses = cache_misses(build, walk, direct)
    ctrl_c = Noticed()  # (one that numba's compiler swallowed is raised between kernels)
    try:
        with ctrl_c.watch():
            for step in steps:
                ctrl_c.check()
                if step == "keys":
                    sorted_ = build.sort_particles(pos, mass)
                elif step == "cells":
                    tree = build.build_cells(sorted_, 4, 8)
                elif step == "multipoles":
                    build.compute_multipoles(tree)
                elif step == "walk":
                    walk.unsort(tree.order, *walk.tree_forces(tree, 0.5, 0.05)[:2])
                elif step == "direct":
                    _warm_direct(pos.astype(np.float64), mass.astype(np.float64))
                with lock:
                    done += 1
                    if bar is not None:
                        bar.update(1)
                if step == "keys":
                    if cache_misses(build, walk, direct) > misses:  # not cached: the rest compiles too
                        announce("compiling the CPU engine (first start only)")
                    elif wait > 0:
                        timer.start()
                    else:
                        announce(loading)
            ctrl_c.check()
    except Exception as exc:  # numba typing or LLVM failure: the engine cannot run here
        raise EngineError(f"the compiled CPU engine failed to build ({type(exc).__name__}: "
                          f"{exc}); use --backend reference (numpy)") from exc
    finally:
        timer.cancel()
        with lock:
            if bar is not None:
                bar.close()
    _warm = True


def _warm_direct(pos: np.ndarray, mass: np.ndarray) -> None:
    """The direct-summation and Hermite kernels, on a few particles."""
    direct.direct_forces(pos, None, mass, 0.05)
    direct.direct_forces(pos, pos, mass, 0.05, potential=False)
    acc, _, jerk = direct.direct_forces(pos, pos, mass, 0.05)
    direct.block_steps(pos.copy(), pos.copy(), acc, jerk, np.full(len(mass), 2, np.int32),
                       mass, 0.05, 1.0, 0.01, 0.0625, 4, False)


class NumbaEngine(CPUEngine):
    """CPUEngine with compiled tree phases, direct summation and Hermite block steps; the same
    tree, interactions and forces."""

    name = "cpu"

    def __init__(self, params=None, gravity: str | None = None):
        super().__init__(params, gravity)
        self._check_mac(self.params.mac)
        warm_up()

    def set_params(self, *args, mac=None, **kwargs) -> None:
        self._check_mac(mac)  # before anything changes
        super().set_params(*args, mac=mac, **kwargs)

    def _check_mac(self, mac) -> None:
        if mac == "acceleration" and self.gravity == "tree":
            raise EngineError('the acceleration MAC runs on the reference and GPU engines; '
                              'use mac = "bonsai" here or --backend reference')

    @property
    def device_name(self) -> str:
        k = jit.thread_count()
        capped = f" of the {threads.count()} asked: NUMBA_NUM_THREADS={k}" \
            if threads.count() > k else ""
        return f"CPU (numba, {k} thread{'s' * (k != 1)}{capped})"

    def _sort(self, pos32: np.ndarray, mass: np.ndarray) -> dict:
        return build.sort_particles(pos32, mass)

    def _build(self, sorted_: dict) -> Tree:
        return build.build_cells(sorted_, self.params.n_leaf, self.params.n_crit)

    def _multipoles(self, tree: Tree) -> None:
        build.compute_multipoles(tree)

    def _direct(self, pos: np.ndarray, vel, active):
        if vel is None and len(self._ghosts()):  # periodic images: the numpy sums
            return super()._direct(pos, vel, active)
        p = self.params
        return direct.direct_forces(pos, vel, self.system.mass, p.eps, p.G, targets=active)

    def _compiled(self, name: str):
        if name == "hermite_block_steps" and self.gravity == "direct":
            return self._block_steps
        return None

    def _block_steps(self, x0, v0, a0, j0, level, *args):
        """direct.block_steps, its time counted as the walk's, its interactions as p-p."""
        s, t0 = self.system, perf_counter()
        out = direct.block_steps(x0, v0, a0, j0, level, *args)
        s.timings["walk"] += perf_counter() - t0
        s.pp += out[1] * s.n
        return out

    def _walk(self, tree: Tree, amac=None):
        p = self.params
        if amac is not None:
            self._check_mac("acceleration")
        return walk.tree_forces(tree, p.theta, p.eps, p.G)

    def _unsort(self, order: np.ndarray, acc_s: np.ndarray, pot_s: np.ndarray):
        return walk.unsort(order, acc_s, pot_s)
