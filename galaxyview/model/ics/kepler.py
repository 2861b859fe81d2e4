"""Two-body Kepler orbits: the relative state at a given separation before pericentre, the time
to pericentre, and the separation as a function of time (G = 1)."""
from __future__ import annotations

import math

import numpy as np

PARABOLIC = 1e-9  # |e - 1| below this is treated as a parabola


def check_orbit(pericentre: float, eccentricity: float, separation: float) -> str | None:
    """None when the orbit can start at `separation` before pericentre, else why not."""
    if separation < pericentre:
        return (f"the initial separation ({separation:g}) is smaller than the pericentre "
                f"({pericentre:g}); start farther out")
    if eccentricity < 1.0 - PARABOLIC:
        apo = pericentre * (1.0 + eccentricity) / (1.0 - eccentricity)
        if separation > apo * (1.0 + 1e-12):
            return (f"a bound orbit with e = {eccentricity:g} never gets farther than its "
                    f"apocentre ({apo:.4g}); start at a separation between pericentre and "
                    f"apocentre or raise the eccentricity")
    return None


def true_anomaly(pericentre: float, eccentricity: float, separation: float) -> float:
    """True anomaly f <= 0 at `separation` on the way in (0 at pericentre)."""
    p = pericentre * (1.0 + eccentricity)
    cos_f = (p / separation - 1.0) / eccentricity
    return -math.acos(min(1.0, max(-1.0, cos_f)))


def relative_state(mass: float, pericentre: float, eccentricity: float,
                   separation: float) -> tuple[np.ndarray, np.ndarray]:
    """Position and velocity of body 2 relative to body 1 (total mass `mass`), in the x-y plane,
    angular momentum along +z, pericentre on the +x axis, approaching."""
    f = true_anomaly(pericentre, eccentricity, separation)
    p = pericentre * (1.0 + eccentricity)
    v0 = math.sqrt(mass / p)
    radial, tangential = v0 * eccentricity * math.sin(f), v0 * (1.0 + eccentricity * math.cos(f))
    c, s = math.cos(f), math.sin(f)
    pos = separation * np.array([c, s, 0.0])
    vel = radial * np.array([c, s, 0.0]) + tangential * np.array([-s, c, 0.0])
    return pos, vel


def time_from_pericentre(mass: float, pericentre: float, eccentricity: float, f) -> np.ndarray:
    """Time since pericentre at true anomaly f (negative before it), f in (-pi, pi)."""
    e, q = eccentricity, pericentre
    f = np.asarray(f, dtype=float)
    if abs(e - 1.0) < PARABOLIC:  # Barker's equation
        d = np.tan(f / 2.0)
        return 0.5 * np.sqrt((2.0 * q) ** 3 / mass) * (d + d ** 3 / 3.0)
    a = q / (1.0 - e)
    n = math.sqrt(mass / abs(a) ** 3)
    t = np.tan(f / 2.0)
    if e < 1.0:
        big_e = 2.0 * np.arctan(math.sqrt((1.0 - e) / (1.0 + e)) * t)
        return (big_e - e * np.sin(big_e)) / n
    big_f = 2.0 * np.arctanh(math.sqrt((e - 1.0) / (e + 1.0)) * t)
    return (e * np.sinh(big_f) - big_f) / n


def time_to_pericentre(mass: float, pericentre: float, eccentricity: float,
                       separation: float) -> float:
    f = true_anomaly(pericentre, eccentricity, separation)
    return -float(time_from_pericentre(mass, pericentre, eccentricity, f))


def separation_at(mass: float, pericentre: float, eccentricity: float, separation: float,
                  times) -> np.ndarray:
    """Separation at the given times (since the start) on the orbit that starts at
    `separation` before pericentre, up to the first apocentre (a table over f inverted)."""
    f0 = true_anomaly(pericentre, eccentricity, separation)
    f_end = math.pi if eccentricity < 1.0 else math.acos(-1.0 / eccentricity)
    f = np.linspace(f0, f_end * (1.0 - 1e-6), 20001)
    t = time_from_pericentre(mass, pericentre, eccentricity, f)
    t -= t[0]
    r = pericentre * (1.0 + eccentricity) / (1.0 + eccentricity * np.cos(f))
    return np.interp(times, t, r)
