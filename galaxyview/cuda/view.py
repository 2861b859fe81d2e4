"""What a GPU engine shows of itself to the renderer: its CUDA context and current arrays."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class DeviceParticles:
    """Device pointers (float4 each) of the particles in the engine's current order: pos4
    (x, y, z, mass), vel4 (vx, vy, vz, Component code as float), acc4 (ax, ay, az, phi); ids
    (uint32: each particle's index in the loaded state; 0 where the engine keeps none).
    Valid until the next force evaluation (its sort moves the particles)."""

    pos4: int
    vel4: int
    acc4: int
    n: int
    ids: int = 0


@dataclass(frozen=True)
class DeviceView:
    """context: the engine's pycuda context; ordinal: its device; particles(): the current
    arrays (the engine must be idle: call it between steps); values(mode): a device pointer
    to float32 values a particle, in the current order, for a colour mode the engine computes
    on the device ('galaxy', 'density'), or None (then the renderer uses a host copy)."""

    context: object
    ordinal: int
    particles: Callable[[], DeviceParticles]
    values: Optional[Callable[[str], Optional[int]]] = None
