"""Units of HDF5 datasets in the conventions of SWIFT and Gadget-4, so that h5py users, yt and
pynbody read what a number means (docs/snapshot-format.md).

Each dataset gets SWIFT's "U_L exponent", "U_M exponent", "U_t exponent" (also U_I, U_T: 0),
"h-scale exponent", "a-scale exponent" (0: galaxyview's values are physical), "Description",
"Expression for physical CGS units" and "Conversion factor to (physical) CGS ...", and
Gadget-4's "length_scaling", "mass_scaling", "velocity_scaling", "a_scaling", "h_scaling",
"to_cgs". The conversion factors exist only where the run has a physical scale (a scene with
[units], or the SI ring scenes); in plain N-body units (G = 1) they are left out.
"""
from __future__ import annotations

import numpy as np

from galaxyview.model.state import Component
from galaxyview.model.units import KPC_CM, MSUN_G, UnitSystem, in_seconds

GADGET_CGS = (KPC_CM, 1e10 * MSUN_G, 1e5)  # Gadget's default units: kpc, 1e10 Msun, km/s
# (U_L, U_M, U_t) exponents and a description of galaxyview's particle arrays
FIELDS = {
    "pos": ((1, 0, 0), "Positions of the particles"),
    "vel": ((1, 0, -1), "Velocities of the particles"),
    "mass": ((0, 1, 0), "Masses of the particles"),
    "radius": ((1, 0, 0), "Hard-sphere radii of the particles (0: a point mass)"),
    "acc": ((1, 0, -2), "Gravitational accelerations of the particles"),
    "pot": ((2, 0, -2), "Gravitational potentials of the particles (per unit mass)"),
    "ids": ((0, 0, 0), "Particle index in the run's initial order"),
    "component": ((0, 0, 0), "What a particle stands for (codes: attribute 'names')"),
    "galaxy": ((0, 0, 0), "Which galaxy a particle was born in (index; names: attribute "
                          "'names' where known)"),
}
COMPONENT_NAMES = [Component(k).label for k in range(max(Component) + 1)]


def names(words) -> np.ndarray:
    """A list of names as an HDF5 attribute (UTF-8 byte strings, as h5py stores them)."""
    return np.array([str(w).encode("utf-8") for w in words])


def read_names(value) -> list[str]:
    return [w.decode("utf-8") if isinstance(w, bytes) else str(w) for w in np.ravel(value)]


def cgs_units(units: UnitSystem | None, G: float = 1.0) -> tuple[float, float, float] | None:
    """(length cm, mass g, velocity cm/s) of one N-body unit, or SI's for G = G_SI (the ring
    scenes); None in N-body units without a physical scale."""
    if in_seconds(G):
        return 100.0, 1000.0, 100.0
    if units is None:
        return None
    return units.length_kpc * KPC_CM, units.mass_msun * MSUN_G, units.velocity_kms * 1e5


def annotate(dataset, name: str, cgs, description: str | None = None) -> None:
    """Write the unit attributes of galaxyview field `name` (a FIELDS key) on `dataset`."""
    (el, em, et), text = FIELDS[name]
    write_unit_attrs(dataset, (el, em, et), cgs, description or text)


def write_unit_attrs(dataset, exponents, cgs, description: str) -> None:
    """SWIFT's and Gadget-4's unit attributes for a quantity of (U_L, U_M, U_t) `exponents`
    in units `cgs` (length cm, mass g, velocity cm/s; None: N-body units, no factors)."""
    el, em, et = exponents
    a = dataset.attrs
    a["U_L exponent"], a["U_M exponent"], a["U_t exponent"] = float(el), float(em), float(et)
    a["U_I exponent"] = a["U_T exponent"] = 0.0
    a["h-scale exponent"] = a["a-scale exponent"] = 0.0
    a["Description"] = description
    # Gadget-4: length, mass and velocity (U_t = U_L / U_v)
    a["length_scaling"], a["mass_scaling"], a["velocity_scaling"] = float(el + et), float(em), \
        float(-et)
    a["a_scaling"] = a["h_scaling"] = 0.0
    words = [f"U_{u}^{e:g}" if e != 1 else f"U_{u}" for u, e in zip("LMt", exponents) if e]
    a["Expression for physical CGS units"] = (" ".join(words) or "[ - ]") + \
        (" [ cgs ]" if cgs else " (N-body units, G = 1: no physical scale)")
    if cgs is None:
        return
    length, mass, velocity = cgs
    factor = length ** el * mass ** em * (length / velocity) ** et
    a["Conversion factor to CGS (not including cosmological corrections)"] = factor
    a["Conversion factor to physical CGS (including cosmological corrections)"] = factor
    a["to_cgs"] = factor


def write_units_group(f, cgs) -> None:
    """/Units: SWIFT's attribute names and Gadget's (UnitLength_in_cm, ...)."""
    g = f.require_group("Units")
    if cgs is None:
        g.attrs["Description"] = "N-body units (G = 1) without a physical scale"
        return
    length, mass, velocity = cgs
    for key, value in (("Unit length in cgs (U_L)", length), ("Unit mass in cgs (U_M)", mass),
                       ("Unit time in cgs (U_t)", length / velocity),
                       ("Unit current in cgs (U_I)", 1.0),
                       ("Unit temperature in cgs (U_T)", 1.0),
                       ("UnitLength_in_cm", length), ("UnitMass_in_g", mass),
                       ("UnitVelocity_in_cm_per_s", velocity)):
        g.attrs[key] = value
