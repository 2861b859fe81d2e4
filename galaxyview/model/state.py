"""Particle state: float32 positions, velocities and masses plus per-particle tags."""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

from galaxyview.errors import GalaxyviewError
from galaxyview.model.finite import NonFiniteError, non_finite

SQUARE_MAX = 1e18  # positions and velocities: their squares and sums of them fit a float32


class Component(enum.IntEnum):
    """What a particle stands for; the viewer colours by it."""

    DISK = 0
    BULGE = 1
    HALO = 2
    BLACK_HOLE = 3
    SATELLITE = 4
    STAR = 5  # a generic star cluster particle (Plummer sphere, cold collapse)

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", " ")


@dataclass(frozen=True)
class Selection:
    """Particles named by what they are, not by index: those of `galaxy` (None: any galaxy)
    whose component is one of `components` (empty: any). A distributed engine's processes each
    find their own members, so no mask of all N travels (the follow camera's set)."""

    galaxy: int | None = None
    components: tuple[int, ...] = ()

    def mask(self, component: np.ndarray, galaxy: np.ndarray) -> np.ndarray:
        """(N,) bool: which of the particles with these tags are selected."""
        pick = np.ones(len(component), dtype=bool)
        if self.galaxy is not None:
            pick &= np.asarray(galaxy) == self.galaxy
        if self.components:
            pick &= np.isin(component, self.components)
        return pick


@dataclass
class ParticleState:
    """N particles in N-body units (G = 1).

    pos, vel: (N, 3) float32; mass: (N,) float32; component: (N,) uint8 (Component);
    galaxy: (N,) int16, which galaxy a particle was born in (0 for single-object scenes);
    time: simulation time in N-body units;
    radius: (N,) float32 hard-sphere radius, finite and >= 0 (0: a point mass; all 0 if not
    given). It is the last field so that positional calls up to `meta` keep working.
    """

    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray
    component: np.ndarray = None
    galaxy: np.ndarray = None
    time: float = 0.0
    meta: dict = field(default_factory=dict)
    radius: np.ndarray = None

    def __post_init__(self):
        self.pos = np.ascontiguousarray(self.pos, dtype=np.float32)
        self.vel = np.ascontiguousarray(self.vel, dtype=np.float32)
        self.mass = np.ascontiguousarray(self.mass, dtype=np.float32)
        n = len(self.mass)
        if self.component is None:
            self.component = np.full(n, Component.STAR, dtype=np.uint8)
        if self.galaxy is None:
            self.galaxy = np.zeros(n, dtype=np.int16)
        self.component = np.ascontiguousarray(self.component, dtype=np.uint8)
        self.galaxy = np.ascontiguousarray(self.galaxy, dtype=np.int16)
        if self.radius is None:
            self.radius = np.zeros(n, dtype=np.float32)
        with np.errstate(over="ignore"):  # too large for float32: inf, refused by validate()
            radius = np.asarray(self.radius, dtype=np.float32)  # 0-d fails the shape check
        self.radius = np.ascontiguousarray(radius) if radius.ndim else radius
        try:
            self.time = float(self.time)
        except (TypeError, ValueError):
            raise GalaxyviewError(f"time must be a number, got {self.time!r}") from None
        self.validate()

    @property
    def n(self) -> int:
        return len(self.mass)

    @property
    def has_radius(self) -> bool:
        """True if any particle has a radius > 0 (otherwise all are point masses)."""
        return bool(np.any(self.radius > 0))

    def validate(self) -> None:
        """Raise GalaxyviewError if shapes disagree, any value is not finite or a mass or radius
        is negative."""
        n = len(self.mass)
        if not math.isfinite(self.time):
            raise NonFiniteError(f"time is {self.time}")
        if self.pos.shape != (n, 3) or self.vel.shape != (n, 3):
            raise GalaxyviewError(
                f"particle arrays disagree: pos {self.pos.shape}, vel {self.vel.shape}, "
                f"mass {self.mass.shape}; expected (N, 3), (N, 3), (N,)"
            )
        if self.component.shape != (n,) or self.galaxy.shape != (n,):
            raise GalaxyviewError("component and galaxy tags must have one entry per particle")
        what = non_finite(pos=self.pos, vel=self.vel, mass=self.mass)
        if what:
            raise NonFiniteError(what)
        for name in ("pos", "vel"):
            a = getattr(self, name)  # (no |a| array: max and min are reductions alone)
            big = max(float(a.max(initial=0.0)), -float(a.min(initial=0.0)))
            if big > SQUARE_MAX:
                raise GalaxyviewError(
                    f"{name} reaches {big:.3g}: float32 arithmetic squares it, so it must stay "
                    f"below {SQUARE_MAX:.0e}; scale the model down (a scene: a smaller size, "
                    f"separation or length unit)")
        if (self.mass < 0).any():
            raise GalaxyviewError("negative particle masses; masses must be >= 0")
        if self.radius.shape != (n,):
            raise GalaxyviewError(f"radius must hold one value per particle, shape ({n},); "
                                  f"got shape {self.radius.shape}")
        bad = ~(np.isfinite(self.radius) & (self.radius >= 0))
        if bad.any():
            first = int(np.argwhere(bad)[0][0])
            raise GalaxyviewError(
                f"radius must be finite and >= 0: {int(bad.sum())} bad entries, first at "
                f"particle {first} (radius {self.radius[first]})")

    def copy(self) -> "ParticleState":
        return ParticleState(
            self.pos.copy(), self.vel.copy(), self.mass.copy(), self.component.copy(),
            self.galaxy.copy(), self.time, dict(self.meta), self.radius.copy(),
        )

    def take(self, index) -> "ParticleState":
        """The particles at `index` (an index array or slice), time and meta kept."""
        return ParticleState(self.pos[index], self.vel[index], self.mass[index],
                             self.component[index], self.galaxy[index], self.time,
                             dict(self.meta), self.radius[index])

    @staticmethod
    def concatenate(states: list["ParticleState"]) -> "ParticleState":
        """Join several states (e.g. galaxies) into one; time and meta from the first."""
        return ParticleState(
            np.concatenate([s.pos for s in states]),
            np.concatenate([s.vel for s in states]),
            np.concatenate([s.mass for s in states]),
            np.concatenate([s.component for s in states]),
            np.concatenate([s.galaxy for s in states]),
            states[0].time if states else 0.0,
            dict(states[0].meta) if states else {},
            np.concatenate([s.radius for s in states]),
        )
