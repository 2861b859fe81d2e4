"""Relative orbit of two galaxies: Kepler's for point masses, or the same energy with the angular
momentum corrected for their extended mass, so that their centres pass at the requested
pericentre (G = 1).

For extended galaxies each centre is followed as a test particle in the other galaxy's
spherically averaged potential: the relative motion r'' = -grad (Phi_1 + Phi_2)(r), i.e. in
  Phi_rel(r) = Phi_1(r) + Phi_2(r),
which is -(M_1 + M_2) / r once the galaxies no longer overlap. The orbit keeps the Kepler energy
of the requested eccentricity, E = (M_1 + M_2)(e - 1) / (2 q), and takes the angular momentum
that turns it round at q: L^2 = 2 q^2 (E - Phi_rel(q)). (Halos that overlap pull less than
point masses: a pure Kepler start makes the centres pass 30-70% wider than asked.)
"""
from __future__ import annotations

import math

import numpy as np

from galaxyview.model.ics import kepler


class RelativeOrbit:
    """Galaxy 2 relative to galaxy 1, in the x-y plane, angular momentum +z, pericentre on +x.

    `potential` = (r, Phi_rel(r)) from mutual_potential, or None for point masses (Kepler)."""

    def __init__(self, mass: float, pericentre: float, eccentricity: float, separation: float,
                 potential=None):
        self.mass, self.q, self.e, self.r0 = mass, pericentre, eccentricity, separation
        self.potential = potential
        if potential is None:
            self.pos, self.vel = kepler.relative_state(mass, pericentre, eccentricity, separation)
            return
        grid, phi = potential
        self._dphi = np.gradient(phi, grid)
        energy = mass * (eccentricity - 1.0) / (2.0 * pericentre)
        self.L = pericentre * math.sqrt(2.0 * (energy - self.phi(pericentre)))
        kinetic = energy - self.phi(separation)
        radial2 = 2.0 * kinetic - (self.L / separation) ** 2
        if radial2 < 0.0:
            raise ValueError(f"the galaxies cannot start {separation:g} apart on this orbit")
        # place the start where the Kepler orbit would be, then integrate to find pericentre
        f = kepler.true_anomaly(pericentre, eccentricity, separation)
        radial, tangential = -math.sqrt(radial2), self.L / separation
        c, s = math.cos(f), math.sin(f)
        pos = separation * np.array([c, s, 0.0])
        vel = radial * np.array([c, s, 0.0]) + tangential * np.array([-s, c, 0.0])
        t, path = self._integrate(pos, vel)
        turn = math.atan2(path[-1, 1], path[-1, 0])  # rotate so that pericentre lies on +x
        rot = np.array([[math.cos(-turn), -math.sin(-turn), 0.0],
                        [math.sin(-turn), math.cos(-turn), 0.0], [0.0, 0.0, 1.0]])
        self.pos, self.vel = rot @ pos, rot @ vel
        self._t, self._r = t, np.linalg.norm(path, axis=1)

    def phi(self, r):
        grid, phi = self.potential
        r = np.asarray(r, dtype=float)
        return np.where(r > grid[-1], -self.mass / np.maximum(r, 1e-300), np.interp(r, grid, phi))

    def _acceleration(self, pos):
        grid = self.potential[0]
        r = float(np.linalg.norm(pos))
        if r > grid[-1]:
            return -self.mass * pos / r ** 3
        return -float(np.interp(r, grid, self._dphi)) * pos / max(r, 1e-300)

    def _integrate(self, pos, vel):
        """Leapfrog until the separation starts to grow again: (times, positions)."""
        t_kepler = kepler.time_to_pericentre(self.mass, self.q, self.e, self.r0)
        dt = t_kepler / 4000.0
        p, v = pos.copy(), vel.copy()
        a = self._acceleration(p)
        times, path = [0.0], [p.copy()]
        while True:
            v = v + 0.5 * dt * a
            p = p + dt * v
            a = self._acceleration(p)
            v = v + 0.5 * dt * a
            if np.dot(p, v) > 0.0 or len(times) > 400000:
                break
            times.append(times[-1] + dt)
            path.append(p.copy())
        return np.array(times), np.array(path)

    @property
    def time_to_pericentre(self) -> float:
        if self.potential is None:
            return kepler.time_to_pericentre(self.mass, self.q, self.e, self.r0)
        return float(self._t[-1])

    def separation_at(self, times) -> np.ndarray:
        """Model separation at `times` since the start, up to the first pericentre."""
        if self.potential is None:
            return kepler.separation_at(self.mass, self.q, self.e, self.r0, times)
        return np.interp(times, self._t, self._r)


def mutual_potential(group, other, r_max: float) -> tuple[np.ndarray, np.ndarray]:
    """(r, Phi_rel(r)) for two galaxies given by their Equilibrium tables: `group` a list of
    them (taken as concentric) and `other` one; r up to r_max."""
    r = np.geomspace(1e-3 * min(eq.r[-1] for eq in (*group, other)), r_max, 2000)
    phi = sum(np.where(r > eq.r[-1], -eq.m_all[-1] / r, np.interp(r, eq.r, eq.phi))
              for eq in (*group, other))
    return r, phi
