"""Velocity structure of a disk galaxy in equilibrium, tabulated on radial grids (G = 1).

The recipe of Hernquist (1993) and Springel, Di Matteo & Hernquist (2005):
- circular velocity from all components: the thick exponential disk's midplane force plus the
  enclosed mass of the spherical components and the black hole;
- disk: sigma_R from a constant Toomre Q (sigma_R = 3.36 Q Sigma / kappa), sigma_phi from the
  epicyclic approximation (sigma_phi^2 = sigma_R^2 kappa^2 / 4 Omega^2), the mean rotation from
  the asymmetric drift, sigma_z from vertical hydrostatic equilibrium (self-gravity of the local
  slab plus the vertical pull of the spherical components);
- bulge and halo: isotropic Jeans equation in the spherically averaged mass of all components,
  sigma = 0 at each truncation radius.

With a softening length eps > 0 the spherical parts (and the disk's spherically averaged mass,
for the Jeans equation) pull as the N-body code's Plummer-softened gravity does: the potential
of a shell of mass m and radius s at radius r is -m [sqrt((r+s)^2+eps^2) - sqrt((r-s)^2+eps^2)]
/ (2 r s), and the black hole's is -M / sqrt(r^2+eps^2). A cusp round a black hole is then drawn
with the dispersions it has in the softened potential, not the Newtonian ones, which diverge
at the centre (where the softened escape speed is finite).
"""
from __future__ import annotations

import math

import numpy as np

from galaxyview.model.ics.plummer import _isotropic
from galaxyview.model.ics.profiles import ExponentialDisk, Spherical

_N_RADII = 2048
_N_DISK_R = 512
_N_DISK_Z = 200
_Z_MAX = 10.0  # disk table height, in scale heights


class Equilibrium:
    """Tables for one galaxy; arrays are evaluated at particle positions with the methods."""

    def __init__(self, disk: ExponentialDisk | None, toomre_q: float,
                 bulge: Spherical | None, halo: Spherical | None, black_hole: float,
                 softening: float = 0.0):
        self.disk, self.toomre_q = disk, toomre_q
        self.softening = softening
        self.spheres = [s for s in (bulge, halo) if s is not None]
        self.black_hole = black_hole
        scales = [s.scale for s in self.spheres] + ([disk.scale_length] if disk else [])
        edges = [s.truncation for s in self.spheres]
        if disk:
            edges.append(disk.R_MAX_SCALES * disk.scale_length)
        self.r = np.geomspace(1e-4 * min(scales), 1.001 * max(edges), _N_RADII)
        self.m_sph = self.spherical_mass(self.r)
        self.m_all = self.m_sph + (disk.cylindrical_mass(self.r) if disk else 0.0)
        # potential of the spherically averaged mass (escape speeds) and its pull g = dphi/dr;
        # g_sph: that of the spherical parts and the black hole alone (the disk's rotation)
        lnr = np.log(self.r)
        if softening > 0:
            self.phi, self.g_all = _softened(self.r, self.m_all, black_hole, softening)
            self.g_sph = _softened(self.r, self.m_sph, black_hole, softening)[1]
        else:
            inward = _cumulative_from_top(self.m_all / self.r, lnr)
            self.phi = -self.m_all[-1] / self.r[-1] - inward
            self.g_all, self.g_sph = self.m_all / self.r ** 2, self.m_sph / self.r ** 2
        self.sigma_sph = [self._jeans(s, lnr) for s in self.spheres]
        if disk:
            self._disk_tables()

    def spherical_mass(self, r):
        """Mass of bulge, halo and black hole inside radius r."""
        return sum((s.enclosed_mass(r) for s in self.spheres), np.zeros_like(r)) + self.black_hole

    def spherical_pull(self, r):
        """|dphi/dr| of bulge, halo and black hole at radius r (M(r) / r^2 unsoftened)."""
        r = np.asarray(r, dtype=float)
        if self.softening <= 0:
            return self.spherical_mass(r) / np.maximum(r, 1e-300) ** 2
        inside = np.interp(r, self.r, self.g_sph) * np.minimum(r / self.r[0], 1.0)  # g ~ r
        return np.where(r > self.r[-1], self.spherical_mass(r) / np.maximum(r, 1e-300) ** 2,
                        inside)

    def _jeans(self, sphere: Spherical, lnr) -> np.ndarray:
        rho = sphere.density(self.r)
        pull_r = self.g_all * self.r if self.softening > 0 else self.m_all / self.r
        pressure = _cumulative_from_top(rho * pull_r, lnr)  # int rho g dr
        return np.sqrt(np.where(rho > 0, pressure / np.maximum(rho, 1e-300), 0.0))

    # -- disk ------------------------------------------------------------------------------------
    def _disk_tables(self) -> None:
        d = self.disk
        R = np.geomspace(1e-3, d.R_MAX_SCALES, _N_DISK_R) * d.scale_length
        vc2 = np.maximum(-R * d.midplane_radial_force(R), 0.0) + (
            R * self.spherical_pull(R) if self.softening > 0 else self.spherical_mass(R) / R)
        omega2 = vc2 / R ** 2
        kappa2 = np.gradient(R * R * vc2, np.log(R)) / R ** 4
        kappa2 = np.maximum(kappa2, 1e-3 * omega2)  # guards the table against noise
        sigma = d.surface_density(R)
        sigma_r = 3.36 * self.toomre_q * sigma / np.sqrt(kappa2)
        ratio = kappa2 / (4.0 * omega2)
        slope = np.gradient(np.log(sigma * sigma_r ** 2), np.log(R))
        self.R, self.vc2 = R, vc2
        self.sigma_r, self.sigma_phi = sigma_r, sigma_r * np.sqrt(ratio)
        self.v_phi = np.sqrt(np.maximum(vc2 + sigma_r ** 2 * (1.0 - ratio + slope), 0.0))
        # vertical: sigma_z^2 = pi Sigma z0 + (1/zeta) int_z^inf zeta M_sph(r) z / r^3 dz
        z0 = d.scale_height
        self.z = np.linspace(0.0, _Z_MAX, _N_DISK_Z) * z0
        sech2 = 1.0 / np.cosh(self.z / z0) ** 2
        rr = np.hypot(R[:, None], self.z[None, :])
        if self.softening > 0:
            pull = sech2[None, :] * self.spherical_pull(rr) * self.z[None, :] / rr
        else:
            pull = sech2[None, :] * self.spherical_mass(rr) * self.z[None, :] / rr ** 3
        outer = _cumulative_from_top(pull, self.z, axis=1)
        self.sigma_z2 = np.pi * sigma[:, None] * z0 + outer / sech2[None, :]

    def circular_velocity(self, R):
        """Model circular velocity in the disk plane (needs a disk; R in N-body units)."""
        return np.sqrt(np.interp(R, self.R, self.vc2))

    def disk_velocities(self, R, z, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """(v_R, v_phi, v_z) for disk particles at cylindrical radius R and height z."""
        v_r = rng.standard_normal(R.size) * np.interp(R, self.R, self.sigma_r)
        v_phi = (np.interp(R, self.R, self.v_phi)
                 + rng.standard_normal(R.size) * np.interp(R, self.R, self.sigma_phi))
        sz2 = _bilinear(np.log(self.R), self.z, self.sigma_z2, np.log(np.maximum(R, 1e-300)),
                        np.abs(z))
        v_z = rng.standard_normal(R.size) * np.sqrt(sz2)
        return v_r, v_phi, v_z

    def sphere_velocities(self, index: int, r, rng: np.random.Generator) -> np.ndarray:
        """(n, 3) isotropic velocities of spherical component `index`: a Maxwellian truncated
        at 0.95 of the local escape speed, widened so that <v^2> = 3 sigma^2 still holds."""
        sigma = np.interp(r, self.r, self.sigma_sph[index])
        v_max = 0.95 * np.sqrt(-2.0 * np.interp(r, self.r, self.phi))
        return _isotropic(_truncated_maxwell_speeds(sigma, v_max, rng), rng)


# Maxwellian speeds in units of its sigma, t = v / sigma: C(t) = int_0^t x^2 exp(-x^2/2) dx and
# the mean square speed (in sigma^2) when truncated at t, 3 - t^3 exp(-t^2/2) / C(t)
_T = np.linspace(0.05, 8.0, 3181)
_CDF = np.sqrt(np.pi / 2) * np.array([math.erf(t / math.sqrt(2)) for t in _T]) \
    - _T * np.exp(-_T ** 2 / 2)
_RATIO = np.sqrt((3.0 - _T ** 3 * np.exp(-_T ** 2 / 2) / _CDF) / 3.0) / _T  # sigma / v_max
_T_ALL = np.concatenate([[0.0], np.geomspace(1e-4, _T[0], 40)[:-1], _T])  # for inverting C
_CDF_ALL = np.concatenate([_T_ALL[:40] ** 3 / 3 - _T_ALL[:40] ** 5 / 10, _CDF])


def _truncated_maxwell_speeds(sigma, v_max, rng):
    """Speeds below v_max, Maxwellian in shape, whose mean square is 3 sigma^2 (as near as
    v_max allows: at most 3/5 v_max^2)."""
    ratio = np.minimum(sigma / np.maximum(v_max, 1e-300), _RATIO[0])
    wide = ratio < _RATIO[-1]  # the cut lies beyond 8 sigma: a plain Maxwellian
    t_max = np.where(wide, _T[-1], np.interp(-ratio, -_RATIO, _T))  # _RATIO decreases
    scale = np.where(wide, sigma, v_max / t_max)
    target = rng.uniform(0.0, 1.0, sigma.size) * np.interp(t_max, _T, _CDF)
    return scale * np.interp(target, _CDF_ALL, _T_ALL)


def _softened(r, mass, point: float, eps: float):
    """(phi, g = dphi/dr) on the grid r of the mass profile `mass` (cumulative, including a
    central point mass `point`), with Plummer softening eps: the point mass exactly, the rest
    as shells at the grid's mid-points."""
    shells = np.diff(mass - point, prepend=0.0)
    s = np.concatenate([[0.5 * r[0]], np.sqrt(r[1:] * r[:-1])])
    phi = -point / np.sqrt(r * r + eps * eps)
    for i in range(0, r.size, 256):  # blocks of radii: a (256, n) table at a time
        ri = r[i:i + 256, None]
        plus = np.sqrt((ri + s) ** 2 + eps * eps)
        minus = np.sqrt((ri - s) ** 2 + eps * eps)
        phi[i:i + 256] -= ((plus - minus) / (2.0 * ri * s)) @ shells
    return phi, np.gradient(phi, r)


def _cumulative_from_top(f, x, axis=0):
    """int_x^x_max f dx by the trapezoid rule, along `axis`."""
    f = np.moveaxis(np.asarray(f, dtype=float), axis, -1)
    steps = 0.5 * (f[..., 1:] + f[..., :-1]) * np.diff(x)
    out = np.zeros_like(f)
    out[..., :-1] = np.cumsum(steps[..., ::-1], axis=-1)[..., ::-1]
    return np.moveaxis(out, -1, axis)


def _bilinear(xg, yg, table, x, y):
    """Bilinear interpolation of table[i, j] given at (xg[i], yg[j]); clamps outside."""
    x = np.clip(x, xg[0], xg[-1])
    y = np.clip(y, yg[0], yg[-1])
    i = np.clip(np.searchsorted(xg, x) - 1, 0, xg.size - 2)
    j = np.clip(np.searchsorted(yg, y) - 1, 0, yg.size - 2)
    tx = (x - xg[i]) / (xg[i + 1] - xg[i])
    ty = (y - yg[j]) / (yg[j + 1] - yg[j])
    return ((1 - tx) * (1 - ty) * table[i, j] + tx * (1 - ty) * table[i + 1, j]
            + (1 - tx) * ty * table[i, j + 1] + tx * ty * table[i + 1, j + 1])
