"""Physical units <-> N-body units (G = 1).

A scene may state its length unit in kpc and mass unit in 1e10 Msun; the velocity and time units
follow from G = 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

G_KPC_KMS2_PER_MSUN = 4.30091727e-6  # G in kpc (km/s)^2 / Msun
KPC_KM = 3.0856775814913673e16
KPC_CM = KPC_KM * 1e5
MYR_S = 3.15576e13
MSUN_G = 1.98892e33  # one solar mass in grams (Gadget's value)
G_SI = 6.674e-11  # m^3 kg^-1 s^-2: the ring scenes' G (SI units)


def in_seconds(G: float) -> bool:
    """True for a scene in SI units (G = G_SI: the ring scenes), whose time is in seconds."""
    return G == G_SI


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

