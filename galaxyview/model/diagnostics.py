"""Conserved quantities and accuracy measures of an N-body state (numpy only, float64 sums).

Potentials are per-particle (phi_i, the self term left out), so W = 1/2 sum m_i phi_i.
Mean pp and pc interactions per particle come from the engine's StepStats.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from galaxyview.errors import GalaxyviewError

DEFAULT_PERCENTILES = (50, 90, 99)


def _vectors(name: str, a, n: int | None = None) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 3 or (n is not None and len(a) != n):
        want = f"({n}, 3)" if n is not None else "(N, 3)"
        raise GalaxyviewError(f"{name} must have shape {want}, got {a.shape}")
    return a


def _scalars(name: str, a, n: int) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.shape != (n,):
        raise GalaxyviewError(f"{name} must have shape ({n},), got {a.shape}")
    return a


def kinetic_energy(vel, mass) -> float:
    """K = 1/2 sum m v^2."""
    m = np.asarray(mass, dtype=np.float64)
    v = _vectors("vel", vel, len(m))
    return 0.5 * float(np.dot(m, np.einsum("ij,ij->i", v, v)))


def potential_energy(mass, pot) -> float:
    """W = 1/2 sum m phi (each pair counted once)."""
    m = np.asarray(mass, dtype=np.float64)
    return 0.5 * float(np.dot(m, _scalars("pot", pot, len(m))))


def total_energy(vel, mass, pot) -> float:
    return kinetic_energy(vel, mass) + potential_energy(mass, pot)


def virial_ratio(kinetic: float, potential: float) -> float:
    """2K / |W|: 1 in virial equilibrium, 0 for a cold start."""
    if potential == 0:
        raise GalaxyviewError("the virial ratio needs a non-zero potential energy")
    return 2.0 * kinetic / abs(potential)


def linear_momentum(vel, mass) -> np.ndarray:
    """P = sum m v, (3,)."""
    m = np.asarray(mass, dtype=np.float64)
    return m @ _vectors("vel", vel, len(m))


def angular_momentum(pos, vel, mass, about=(0.0, 0.0, 0.0)) -> np.ndarray:
    """L = sum m (x - about) x v, (3,)."""
    m = np.asarray(mass, dtype=np.float64)
    x = _vectors("pos", pos, len(m)) - np.asarray(about, dtype=np.float64)
    return m @ np.cross(x, _vectors("vel", vel, len(m)))


def centre_of_mass(pos, mass) -> np.ndarray:
    """sum m x / sum m, (3,)."""
    m = np.asarray(mass, dtype=np.float64)
    total = m.sum()
    if total <= 0:
        raise GalaxyviewError("the centre of mass needs a positive total mass")
    return (m @ _vectors("pos", pos, len(m))) / total


def half_mass_radius(pos, mass, centre=None) -> float:
    """Radius about `centre` (default: the centre of mass) enclosing half the total mass."""
    m = np.asarray(mass, dtype=np.float64)
    x = _vectors("pos", pos, len(m))
    centre = centre_of_mass(x, m) if centre is None else np.asarray(centre, dtype=np.float64)
    r = np.sqrt(((x - centre) ** 2).sum(axis=1))
    order = np.argsort(r)
    enclosed = np.cumsum(m[order])
    return float(r[order][np.searchsorted(enclosed, 0.5 * enclosed[-1])])


def relative_force_errors(a_test, a_ref) -> np.ndarray:
    """|a_test - a_ref| / |a_ref| per particle (0 where both vanish, inf where only a_ref does)."""
    ref = _vectors("a_ref", a_ref)
    test = _vectors("a_test", a_test, len(ref))
    err = np.sqrt(((test - ref) ** 2).sum(axis=1))
    norm = np.sqrt((ref * ref).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norm > 0, err / np.where(norm > 0, norm, 1.0),
                        np.where(err > 0, np.inf, 0.0))


def force_error_percentiles(a_test, a_ref, percentiles=DEFAULT_PERCENTILES) -> tuple:
    """Percentiles of the relative force error, in the order asked: (p50, p90, p99) by default."""
    q = np.atleast_1d(np.asarray(percentiles, dtype=np.float64))
    if q.size == 0 or (q < 0).any() or (q > 100).any():
        raise GalaxyviewError(f"percentiles must lie in 0..100, got {percentiles!r}")
    err = relative_force_errors(a_test, a_ref)
    if err.size == 0:
        raise GalaxyviewError("force errors need at least one particle")
    return tuple(float(v) for v in np.percentile(err, q))


@dataclass(frozen=True)
class Summary:
    """The usual diagnostics of one state."""

    kinetic: float
    potential: float
    momentum: np.ndarray
    angular_momentum: np.ndarray
    centre_of_mass: np.ndarray
    half_mass_radius: float

    @property
    def total(self) -> float:
        return self.kinetic + self.potential

    @property
    def virial_ratio(self) -> float:
        return virial_ratio(self.kinetic, self.potential)


def summarize(pos, vel, mass, pot) -> Summary:
    """Energies, momenta, centre of mass and half-mass radius of one state."""
    com = centre_of_mass(pos, mass)
    return Summary(kinetic_energy(vel, mass), potential_energy(mass, pot),
                   linear_momentum(vel, mass), angular_momentum(pos, vel, mass),
                   com, half_mass_radius(pos, mass, com))
