"""The shearing sheet: a patch of a planetary ring co-rotating with its orbit (Hill's frame).

x points radially outward, y along the orbit, z up; a particle at rest on its guiding centre at
radial offset x moves with v_y = -3/2 Omega x. The box spans [-Lx/2, Lx/2) x [-Ly/2, Ly/2) and
is open in z. Its images (ghost boxes) at radial offset i Lx slide along y with
-3/2 Omega i Lx: image (i, j) sits at (i Lx, j Ly - i s(t)) with s(t) = 3/2 Omega Lx t mod Ly.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

from galaxyview.errors import ParameterError

RESTITUTION_LAWS = ("constant", "bridges")
GHOSTS_MAX = 4  # rings of ghost boxes around the box for gravity
BRIDGES_EXPONENT = -0.234  # Bridges, Hatzes & Lin (1984): eps_n = (v_n / v_c)^-0.234
BRIDGES_VC_SI = 7.7e-5  # m/s (0.0077 cm/s)


def _real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))


@dataclass(frozen=True)
class Sheet:
    """omega: orbital frequency of the reference orbit (1/time unit), > 0
    lx, ly: box size, radial and azimuthal (length unit), > 0
    ghosts: rings of ghost boxes in the gravity (1: the 8 neighbours; 0: the box alone)
    restitution: normal coefficient of restitution law, "constant" (eps_n) or "bridges"
      ((v_n / v_c)^-0.234, at most 1)
    eps_n: the constant coefficient, 0..1
    v_c: the Bridges law's velocity scale (velocity unit; 7.7e-5 m/s)
    self_gravity: False leaves the particles' gravity out (collisions and Hill's tides only)
    """

    omega: float
    lx: float
    ly: float
    ghosts: int = 1
    restitution: str = "bridges"
    eps_n: float = 0.5
    v_c: float = BRIDGES_VC_SI
    self_gravity: bool = True

    def __post_init__(self):
        for name in ("omega", "lx", "ly", "v_c"):
            x = getattr(self, name)
            if not (_real(x) and float(x) > 0):
                raise ParameterError(f"sheet {name} must be a positive number, got {x!r}")
            object.__setattr__(self, name, float(x))
        if not (_real(self.eps_n) and 0 <= float(self.eps_n) <= 1):
            raise ParameterError(f"sheet eps_n (coefficient of restitution) must be in [0, 1], "
                                 f"got {self.eps_n!r}")
        object.__setattr__(self, "eps_n", float(self.eps_n))
        if self.restitution not in RESTITUTION_LAWS:
            raise ParameterError(f"sheet restitution must be one of "
                                 f"{', '.join(RESTITUTION_LAWS)}, got {self.restitution!r}")
        if not isinstance(self.self_gravity, bool):
            raise ParameterError(f"sheet self_gravity must be true or false, got "
                                 f"{self.self_gravity!r}")
        if not (isinstance(self.ghosts, int) and not isinstance(self.ghosts, bool)
                and 0 <= self.ghosts <= GHOSTS_MAX):
            raise ParameterError(f"sheet ghosts (rings of ghost boxes) must be an integer in "
                                 f"0..{GHOSTS_MAX}, got {self.ghosts!r}")

    def with_(self, **changes) -> "Sheet":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def period(self) -> float:
        """One orbit: 2 pi / Omega."""
        return 2 * math.pi / self.omega

    def shift(self, t: float) -> float:
        """The y offset of the outer neighbour box's content at time t, in [0, Ly)."""
        return math.fmod(1.5 * self.omega * self.lx * t, self.ly) % self.ly

    def ghost_offsets(self, t: float, rings: int | None = None):
        """Position and velocity offsets (K, 3) of the ghost boxes within `rings` (default
        self.ghosts) of the box, the box itself left out, ordered by (i, j)."""
        rings = self.ghosts if rings is None else rings
        s = self.shift(t)
        ij = [(i, j) for i in range(-rings, rings + 1) for j in range(-rings, rings + 1)
              if (i, j) != (0, 0)]
        pos = np.array([(i * self.lx, j * self.ly - i * s, 0.0) for i, j in ij]).reshape(-1, 3)
        vel = np.array([(0.0, -1.5 * self.omega * i * self.lx, 0.0) for i, _ in ij]).reshape(-1, 3)
        return pos, vel

    def restitution_of(self, vn: np.ndarray) -> np.ndarray:
        """eps_n for normal impact speeds |vn|."""
        if self.restitution == "constant":
            return np.full(np.shape(vn), self.eps_n)
        with np.errstate(divide="ignore"):
            return np.minimum(1.0, (np.abs(vn) / self.v_c) ** BRIDGES_EXPONENT)
