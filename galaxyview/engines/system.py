"""What physics modules may use of an engine: its `system`.

HostSystem (CPU engine): float64 numpy arrays in the loaded order that a module reads and may
replace or change in place. DeviceSystem (GPU engine): device pointers in the engine's current
(sorted) order and kernel launches. Both give forces on all particles or on an active subset,
with the jerk where the gravity module provides it.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from galaxyview.errors import EngineError


class System(abc.ABC):
    """`time`: the simulation time of the positions (an integrator that drifts in parts moves
    it within its step; the engine sets it after each step): boundaries with moving images
    (the shearing sheet) read it."""

    kind = "?"  # "cpu" or "gpu"
    provides_jerk = False  # the gravity module gives da/dt with the accelerations
    time: float = 0.0

    @property
    @abc.abstractmethod
    def params(self):
        """The engine's Params now."""

    @property
    @abc.abstractmethod
    def n(self) -> int:
        """Particles loaded."""

    @abc.abstractmethod
    def forces(self, active=None, jerk: bool = False) -> None:
        """Accelerations and potentials at the current positions into the system's arrays:
        of all particles, or only of `active` (the others keep theirs). jerk=True also gives
        the jerk where `provides_jerk`; EngineError otherwise."""

    def _refuse_jerk(self, gravity: str) -> None:
        raise EngineError(f"{gravity} gravity on the {self.kind.upper()} engine gives no jerk; "
                          "choose an integrator that needs accelerations only")


class HostSystem(System):
    """pos, vel, acc, jerk (N, 3), pot, mass, radius (N,): float64 arrays in the loaded order
    (jerk: of the last force evaluation that asked for it; None until one did)."""

    kind = "cpu"
    pos: np.ndarray
    vel: np.ndarray
    acc: np.ndarray
    jerk: np.ndarray
    pot: np.ndarray
    mass: np.ndarray
    radius: np.ndarray

    def compiled(self, name: str):
        """The engine's compiled routine `name`, or None where it has none (the module then
        runs its numpy code). The compiled CPU engine gives "hermite_block_steps"
        (engines/cpu_numba/direct.py `block_steps`: a Hermite engine step's block steps)."""
        return None


@dataclass(frozen=True)
class DeviceActive:
    """An active subset on the device, for DeviceSystem.forces: the particles whose level
    (`level`: a device array of int32 indexed by particle id, as DeviceParticles.ids gives
    it) is >= kmin; `count` of them."""

    level: int
    kmin: int
    count: int


class DeviceSystem(System):
    """Particles live on the device, in the engine's current order (the tree's sort moves them
    at every force evaluation: ask `particles()` again after `forces()`). `forces(active)`
    takes a DeviceActive: only those particles get new accelerations (the others keep theirs
    or hold stale values)."""

    kind = "gpu"

    @abc.abstractmethod
    def particles(self):
        """The current galaxyview.cuda.DeviceParticles (pos4, vel4, acc4, n)."""

    @abc.abstractmethod
    def launch(self, kernel: str, *args, grid=None) -> None:
        """Run a kernel of the engine's module, 256 threads a block, on the engine's stream (no
        wait): over the particles in grid-stride loops, or on `grid` blocks ((x, y) or x)."""

    @property
    @abc.abstractmethod
    def multiprocessors(self) -> int:
        """The device's streaming multiprocessors (to size a launch that must fill it)."""

    @abc.abstractmethod
    def account(self, timings_ms: dict, pp: int) -> None:
        """A module that evaluates forces with its own kernels reports their cost for the
        step's statistics: milliseconds by phase (base.PHASES) and p-p interactions."""
