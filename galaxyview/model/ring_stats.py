"""Diagnostics of a shearing-sheet ring patch (numpy): optical depth, filling factor, velocity
dispersion about the shear flow, thickness, and the wake pitch angle."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage


@dataclass(frozen=True)
class RingStats:
    optical_depth: float  # geometric: N pi <r^2> / (Lx Ly)
    filling_factor: float  # volume of the spheres / volume of the layer (|z| < sqrt(3) H)
    dispersion: tuple  # (sigma_x, sigma_y, sigma_z) about the shear flow v_y = -3/2 Omega x
    thickness: float  # H = rms z (mass-weighted)
    orbits: float  # time in orbits


def ring_stats(pos, vel, mass, radius, sheet, time: float, n_total: int | None = None
               ) -> RingStats:
    """The patch's statistics from all its particles, or from a sample of them that stands
    for `n_total` (the sums of the optical depth and filling factor scaled up)."""
    pos, vel = np.asarray(pos, np.float64), np.asarray(vel, np.float64)
    radius, mass = np.asarray(radius, np.float64), np.asarray(mass, np.float64)
    area = sheet.lx * sheet.ly
    scale = n_total / len(mass) if n_total else 1.0
    tau = scale * math.pi * float(np.sum(radius ** 2)) / area
    w = mass / mass.sum()
    zc = float(w @ pos[:, 2])
    h = math.sqrt(float(w @ (pos[:, 2] - zc) ** 2))
    # the layer: a uniform slab of the same rms thickness is sqrt(3) H thick each way
    layer = 2 * math.sqrt(3) * h * area
    ff = scale * 4 / 3 * math.pi * float(np.sum(radius ** 3)) / layer if layer > 0 else \
        float("inf")
    v = vel.copy()
    v[:, 1] += 1.5 * sheet.omega * pos[:, 0]
    v -= w @ v
    sigma = tuple(math.sqrt(float(w @ v[:, k] ** 2)) for k in range(3))
    return RingStats(tau, ff, sigma, h, time / sheet.period)


def wake_pitch_angle(pos, sheet, cells: int = 128) -> float:
    """The wakes' angle (degrees) from the azimuthal (y) direction toward +x, from the
    autocorrelation of the surface density on a cells x cells grid (Salo et al. 2004): the
    orientation of the central peak's long axis, from the second moments of its connected
    part above half its height (the density smoothed over a cell, the zero lag's particle noise
    left out, so that the peak is the wakes' and not one cell's). Negative: trailing (tilted with the shear v_y = -3/2 Omega x)."""
    h, _, _ = np.histogram2d(pos[:, 0], pos[:, 1], bins=cells,
                             range=[[-sheet.lx / 2, sheet.lx / 2], [-sheet.ly / 2, sheet.ly / 2]])
    d = ndimage.gaussian_filter(h - h.mean(), 1.0, mode="wrap")  # the wakes, not the noise
    f = np.fft.rfft2(d)
    ac = np.fft.fftshift(np.fft.irfft2(f * np.conj(f), s=d.shape))
    c = cells // 2  # the zero lag holds the particles' own (Poisson) variance: left out
    ac[c, c] = 0.25 * (ac[c - 1, c] + ac[c + 1, c] + ac[c, c - 1] + ac[c, c + 1])
    ac /= ac.max()
    dx, dy = sheet.lx / cells, sheet.ly / cells
    ix = (np.arange(cells) - cells // 2) * dx
    iy = (np.arange(cells) - cells // 2) * dy
    x, y = np.meshgrid(ix, iy, indexing="ij")
    labels, _ = ndimage.label(ac > 0.5)  # the central peak alone, not its periodic kin
    peak = labels == labels[cells // 2, cells // 2]
    wgt = ac[peak]
    xx, yy, xy = (wgt @ x[peak] ** 2, wgt @ y[peak] ** 2, wgt @ (x[peak] * y[peak]))
    return 0.5 * math.degrees(math.atan2(2 * xy, yy - xx))  # long axis, from y toward +x
