"""The compiled CPU engine: the numpy engine's shell with compiled tree phases.

State, physics modules, direct summation, checks and the last good state are CPUEngine's; the
keys, cells, groups, multipoles and the walk run as numba kernels (build.py, walk.py), compiled
on first use and cached on disk (warm_up shows progress while it compiles).
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.cpu import threads
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.cpu_numba import build, jit, walk
from galaxyview.errors import EngineError
from galaxyview.interrupt import Noticed

ANNOUNCE_AFTER_S = 2.0  # say "compiling" when readying the kernels takes longer (a cache load does not)
_warm = False


def warm_up(stream=None, announce_after: float | None = None) -> None:
    """Compile (or load from the cache) every kernel on a tiny tree, once per process. When it
    takes longer than announce_after seconds (ANNOUNCE_AFTER_S; 0: at once), a progress line
    goes to `stream` (stderr)."""
    global _warm
    if _warm:
        return
    from tqdm import tqdm

    stream = stream or sys.stderr
    steps = ("keys", "cells", "multipoles", "walk")
    bar = None
    lock = threading.Lock()

    def announce():
        nonlocal bar
        with lock:
            if bar is None:
                bar = tqdm(total=len(steps), desc="compiling the CPU engine (first start only)",
                           unit="kernel", file=stream, leave=True)
                bar.update(done)

    wait = ANNOUNCE_AFTER_S if announce_after is None else announce_after
    timer = threading.Timer(wait, announce)
    timer.daemon = True
    done = 0
    pos = np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32)
    mass = np.ones(64, np.float32)
    if wait > 0:
        timer.start()
    else:
        announce()
    ctrl_c = Noticed()  # (one that numba's compiler swallowed is raised between kernels)
    try:
        with ctrl_c.watch():
            sorted_ = build.sort_particles(pos, mass)
            for step in steps:
                ctrl_c.check()
                if step == "cells":
                    tree = build.build_cells(sorted_, 4, 8)
                elif step == "multipoles":
                    build.compute_multipoles(tree)
                elif step == "walk":
                    walk.unsort(tree.order, *walk.tree_forces(tree, 0.5, 0.05)[:2])
                with lock:
                    done += 1
                    if bar is not None:
                        bar.update(1)
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


class NumbaEngine(CPUEngine):
    """CPUEngine with compiled tree phases; the same tree, interactions and forces."""

    name = "cpu"

    def __init__(self, params=None, gravity: str | None = None):
        super().__init__(params, gravity)
        self._check_mac(self.params.mac)
        if self.gravity == "tree":  # direct gravity (Hermite) runs no compiled phase
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

    def _walk(self, tree: Tree, amac=None):
        p = self.params
        if amac is not None:
            self._check_mac("acceleration")
        return walk.tree_forces(tree, p.theta, p.eps, p.G)

    def _unsort(self, order: np.ndarray, acc_s: np.ndarray, pot_s: np.ndarray):
        return walk.unsort(order, acc_s, pot_s)
