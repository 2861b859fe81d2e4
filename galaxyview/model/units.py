"""Physical units <-> N-body units (G = 1).

A scene may state its length unit in kpc and mass unit in 1e10 Msun; the velocity and time units
follow from G = 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# The physical constants of the package, defined here only (tests/test_units.py checks them
# against astropy): CODATA 2018 G, IAU 2015 nominal solar mass, IAU 2012 au-based parsec,
# Julian year.
G_SI = 6.6743e-11  # m^3 kg^-1 s^-2 (the ring scenes' G: SI units)
G_CGS = G_SI * 1e3  # cm^3 g^-1 s^-2
MSUN_KG = 1.988409870698051e30  # GM_sun / G
MSUN_G = MSUN_KG * 1e3
PC_M = 3.0856775814913673e16  # 648000 / pi au
KPC_M = PC_M * 1e3
KPC_KM = KPC_M * 1e-3
KPC_CM = KPC_M * 1e2
YR_S = 365.25 * 86400.0  # Julian year
MYR_S = YR_S * 1e6
G_KPC_KMS2_PER_MSUN = G_SI * MSUN_KG / KPC_M / 1e6  # G in kpc (km/s)^2 / Msun


def in_seconds(G: float) -> bool:
    """True for a scene in SI units (G = G_SI, to 1e-3: the ring scenes), whose time is in
    seconds."""
    return abs(G / G_SI - 1.0) < 1e-3


@dataclass(frozen=True)
class UnitSystem:
    """N-body unit system: one length unit is `length_kpc` kpc, one mass unit `mass_msun` Msun."""

    length_kpc: float = 1.0
    mass_msun: float = 1.0e10

    @property
    def velocity_kms(self) -> float:
        """One N-body velocity unit in km/s."""
        return math.sqrt(G_KPC_KMS2_PER_MSUN * self.mass_msun / self.length_kpc)

    @property
    def time_myr(self) -> float:
        """One N-body time unit in Myr."""
        return self.length_kpc * KPC_KM / self.velocity_kms / MYR_S

    # conversions into N-body units
    def length(self, kpc):
        return kpc / self.length_kpc

    def mass(self, msun):
        return msun / self.mass_msun

    def velocity(self, kms):
        return kms / self.velocity_kms

    def time(self, myr):
        return myr / self.time_myr

