"""Mass models of galaxy components (G = 1): spherical Hernquist and NFW profiles with a sharp
truncation, and the exponential disk with a sech^2 vertical profile.

Spherical profiles carry their realised mass: `mass` is the mass inside the truncation radius.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Spherical:
    """A truncated spherical profile: kind "hernquist" or "nfw", mass inside `truncation`,
    scale radius `scale` (Hernquist a, NFW r_s)."""

    kind: str
    mass: float
    scale: float
    truncation: float

    def _shape_mass(self, x):
        """Enclosed mass of the untruncated profile with unit normalisation, x = r / scale."""
        if self.kind == "hernquist":
            return x * x / (1.0 + x) ** 2
        return np.log1p(x) - x / (1.0 + x)

    def _shape_density(self, x):
        if self.kind == "hernquist":
            return 1.0 / (2.0 * np.pi * x * (1.0 + x) ** 3)
        return 1.0 / (4.0 * np.pi * x * (1.0 + x) ** 2)

    @property
    def _norm(self) -> float:
        return self.mass / float(self._shape_mass(self.truncation / self.scale))

    def enclosed_mass(self, r):
        x = np.minimum(np.asarray(r, dtype=float), self.truncation) / self.scale
        return self._norm * self._shape_mass(x)

    def density(self, r):
        r = np.asarray(r, dtype=float)
        rho = self._norm / self.scale ** 3 * self._shape_density(np.maximum(r, 1e-300) / self.scale)
        return np.where(r <= self.truncation, rho, 0.0)

    def sample_radii(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n radii drawn from the truncated profile (inverse of the cumulative mass), one in
        each of n equal-mass shells, in random order (stratified: the mass inside any radius is
        realised to within one particle, not sqrt(n) of them, so that a few heavy halo
        particles in a bulge do not add a random 10-20% to its mass)."""
        frac = (rng.permutation(n) + rng.uniform(0.0, 1.0, n)) / max(n, 1)
        x_t = self.truncation / self.scale
        if self.kind == "hernquist":  # m = x^2 / (1 + x)^2  =>  x = sqrt(m) / (1 - sqrt(m))
            s = np.sqrt(frac * self._shape_mass(x_t))
            return self.scale * s / (1.0 - s)
        x = np.concatenate([[0.0], np.geomspace(1e-6 * x_t, x_t, 4096)])
        m = self._shape_mass(x)
        return self.scale * np.interp(frac * m[-1], m, x)


# -- exponential disk --------------------------------------------------------------------------
@dataclass(frozen=True)
class ExponentialDisk:
    """Sigma(R) = M / (2 pi h^2) exp(-R/h), rho(R, z) = Sigma(R) sech^2(z/z0) / (2 z0).

    Particles are drawn out to R_MAX_SCALES scale lengths (0.05% of the mass lies beyond)."""

    mass: float
    scale_length: float
    scale_height: float

    R_MAX_SCALES = 10.0

    def surface_density(self, R):
        h = self.scale_length
        return self.mass / (2.0 * np.pi * h * h) * np.exp(-np.asarray(R, dtype=float) / h)

    def cylindrical_mass(self, R):
        x = np.asarray(R, dtype=float) / self.scale_length
        return self.mass * (1.0 - (1.0 + x) * np.exp(-x))

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(R, phi, z) of n particles."""
        x = np.linspace(0.0, self.R_MAX_SCALES, 8193)
        m = 1.0 - (1.0 + x) * np.exp(-x)
        R = self.scale_length * np.interp(rng.uniform(0.0, m[-1], n), m, x)
        phi = rng.uniform(0.0, 2.0 * np.pi, n)
        # the cumulative of sech^2(z/z0) / (2 z0) is (1 + tanh(z/z0)) / 2
        u = rng.uniform(-1.0, 1.0, n)
        z = self.scale_height * np.arctanh(np.clip(u, -1.0 + 1e-12, 1.0 - 1e-12))
        return R, phi, z

    def midplane_radial_force(self, R):
        """-dPhi/dR of the thick disk in its midplane (negative: inwards), by the Hankel
        transform F = -M int k J1(kR) (1 + k^2 h^2)^(-3/2) H(k z0) dk, H the vertical factor."""
        h = self.scale_length
        f = _disk_force_table(round(self.scale_height / h, 12))
        x = np.asarray(R, dtype=float) / h
        inside = np.interp(x, _DISK_X, f)
        outside = 1.0 / np.maximum(x, 1e-300) ** 2  # beyond the table: a point mass
        return -self.mass / (h * h) * np.where(x <= _DISK_X[-1], inside, outside)


_DISK_X = np.concatenate([[0.0], np.geomspace(1e-3, 3.0 * ExponentialDisk.R_MAX_SCALES, 400)])


@lru_cache(maxsize=16)
def _disk_force_table(height_ratio: float) -> np.ndarray:
    """|F_R| for M = h = 1 at the radii _DISK_X, for z0/h = height_ratio."""
    k_max = 300.0
    dk = 2.0 * np.pi / (_DISK_X[-1] * 10.0)  # 10 points per oscillation of J1(k R_max)
    k = np.arange(0.0, k_max + dk, dk)
    weight = k * (1.0 + k * k) ** -1.5 * sech2_laplace(k * height_ratio) * dk
    weight[[0, -1]] *= 0.5  # trapezoid rule
    out = np.empty(_DISK_X.size)
    for i in range(0, _DISK_X.size, 50):
        x = _DISK_X[i:i + 50, None]
        out[i:i + 50] = bessel_j1(k[None, :] * x) @ weight
    return out


def sech2_laplace(s):
    """H(s) = int_0^inf sech^2(u) exp(-s u) du (H(0) = 1; ~1/s for large s)."""
    s = np.asarray(s, dtype=float)
    grid = np.concatenate([[0.0], np.geomspace(1e-3, 1e4, 300)])
    u = np.linspace(0.0, 30.0, 6001)
    f = np.exp(-grid[:, None] * u[None, :]) / np.cosh(u[None, :]) ** 2
    table = np.trapezoid(f, u, axis=1)
    large = s > grid[-1]
    return np.where(large, 1.0 / np.maximum(s, 1e-300), np.interp(s, grid, table))


def bessel_j1(x):
    """Bessel function J1 (rational approximations of Numerical Recipes, error < 1e-7)."""
    x = np.asarray(x, dtype=float)
    ax = np.abs(x)
    small = ax < 8.0
    y = x * x
    num = x * (72362614232.0 + y * (-7895059235.0 + y * (242396853.1 + y * (
        -2972611.439 + y * (15704.48260 + y * (-30.16036606))))))
    den = 144725228442.0 + y * (2300535178.0 + y * (18583304.74 + y * (
        99447.43394 + y * (376.9991397 + y))))
    z = 8.0 / np.maximum(ax, 8.0)
    y = z * z
    xx = ax - 2.356194491
    p = 1.0 + y * (0.183105e-2 + y * (-0.3516396496e-4 + y * (0.2457520174e-5 + y * (
        -0.240337019e-6))))
    q = 0.04687499995 + y * (-0.2002690873e-3 + y * (0.8449199096e-5 + y * (
        -0.88228987e-6 + y * 0.105787412e-6)))
    large = np.sqrt(0.636619772 / np.maximum(ax, 8.0)) * (np.cos(xx) * p - z * np.sin(xx) * q)
    return np.where(small, num / den, np.sign(x) * large)
