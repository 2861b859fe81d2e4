"""Particle arrays from a user (the Python API): checked, quantities converted to N-body units,
and the read-only arrays the API hands back.

Quantities (astropy or unyt) are read through their `to_value(unit)`, so neither library is
imported here.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from galaxyview.errors import ParameterError
from galaxyview.model.finite import non_finite
from galaxyview.model.params import F32_MAX
from galaxyview.model.state import SQUARE_MAX, Component, ParticleState
from galaxyview.model.units import UnitSystem

UNIT_OF = {"length": "kpc", "velocity": "km/s", "mass": "Msun", "time": "Myr"}
_SCALE = {"length": "length_kpc", "velocity": "velocity_kms", "mass": "mass_msun",
          "time": "time_myr"}
_INT16 = np.iinfo(np.int16)


def is_quantity(value) -> bool:
    """An astropy or unyt quantity (a number or array with a unit)."""
    return hasattr(value, "to_value") and (hasattr(value, "unit") or hasattr(value, "units"))


def in_nbody(value, kind: str, name: str, units: UnitSystem | None, where: str = ""):
    """`value` in N-body units: numbers and arrays as they are; a quantity of `kind` ("length",
    "velocity", "mass", "time") converted with `units`. ParameterError for a quantity of another
    kind, or one without a unit system (`where`: what has none, for the message)."""
    if not is_quantity(value):
        return value
    unit = UNIT_OF[kind]
    if units is None:
        raise ParameterError(f"{name} is a quantity ({value!r}), but {where or 'this simulation'}"
                             f" has no physical units: give {name} in N-body units (G = 1)")
    try:
        raw = value.to_value(unit)
    except Exception as exc:  # astropy's and unyt's UnitConversionError, unknown units
        raise ParameterError(f"{name} must be a {kind} (a quantity convertible to {unit}); "
                             f"{value!r} is not ({exc})") from None
    scale = getattr(units, _SCALE[kind])
    if np.ndim(raw):
        return np.asarray(raw, np.float64) / scale
    return float(raw) / scale


def _real(name: str, value, kind: str, units: UnitSystem | None) -> np.ndarray:
    """A float64 array of real numbers (a quantity converted); ParameterError for strings,
    bools, complex or ragged input."""
    value = in_nbody(value, kind, name, units)
    try:
        a = np.asarray(value)
    except ValueError:  # a ragged list
        raise ParameterError(f"{name} must be an array of numbers, got {value!r}") from None
    if a.dtype.kind not in "iuf":
        raise ParameterError(f"{name} must hold real numbers, got an array of dtype {a.dtype}")
    return a.astype(np.float64)


def _first(mask: np.ndarray) -> int:
    return int(np.argwhere(mask)[0][0])


def particle_state(pos, vel, mass, component=None, galaxy=None, time=0.0,
                   units: UnitSystem | None = None) -> ParticleState:
    """A ParticleState from user arrays: pos (N, 3) or (3,) for one particle, vel the same
    shape or None (at rest), mass (N,) or one number for all; numbers in N-body units, or
    quantities converted with `units`. component: Component codes (0..5), galaxy: int16 codes,
    each (N,) or one for all. Every value is checked: ParameterError says which and where."""
    p = _real("pos", pos, "length", units)
    p = p.reshape(1, 3) if p.shape == (3,) else p
    if p.ndim != 2 or p.shape[1] != 3 or len(p) == 0:
        raise ParameterError(f"pos must have shape (N, 3) with N >= 1 (or (3,) for one "
                             f"particle), got {p.shape}")
    n = len(p)
    v = np.zeros_like(p) if vel is None else _real("vel", vel, "velocity", units)
    v = v.reshape(1, 3) if v.shape == (3,) and n == 1 else v
    if v.shape != (n, 3):
        raise ParameterError(f"vel must have the shape of pos, ({n}, 3), got {v.shape}")
    m = _real("mass", mass, "mass", units)
    m = np.full(n, float(m)) if m.ndim == 0 else m
    if m.shape != (n,):
        raise ParameterError(f"mass must have shape ({n},) (one per particle) or be one "
                             f"number, got {m.shape}")
    what = non_finite(pos=p, vel=v, mass=m)
    if what:
        raise ParameterError(f"{what}; give finite values")
    for name, a in (("pos", p), ("vel", v)):
        big = np.abs(a).max(axis=1) > SQUARE_MAX
        if big.any():
            raise ParameterError(f"{name} of particle {_first(big)} is {a[_first(big)].tolist()}: "
                                 f"float32 "
                                 f"arithmetic squares it, so each component must stay below "
                                 f"{SQUARE_MAX:.0e} (N-body units): scale the system down")
    with np.errstate(over="ignore"):
        bad = ~((m > 0) & (m <= F32_MAX) & (m.astype(np.float32) > 0))
    if bad.any():
        i = _first(bad)
        raise ParameterError(f"mass must be > 0 and within float32 ({F32_MAX:.3g}; the smallest "
                             f"1.4e-45) for every particle: particle {i} has {float(m[i]):g} "
                             f"({int(bad.sum())} bad)")
    t = in_nbody(time, "time", "time", units)
    if not (isinstance(t, numbers.Real) and not isinstance(t, bool) and math.isfinite(t)):
        raise ParameterError(f"time must be a finite number (N-body units) or a time "
                             f"quantity, got {time!r}")
    return ParticleState(p, v, m, _codes("component", component, n, 0, max(Component)),
                         _codes("galaxy", galaxy, n, _INT16.min, _INT16.max), float(t))


def _codes(name: str, value, n: int, lo: int, hi: int) -> np.ndarray | None:
    if value is None:
        return None
    a = np.asarray(value)
    a = np.full(n, a) if a.ndim == 0 else a
    if a.shape != (n,) or a.dtype.kind not in "iu" or (a.size and (a.min() < lo or
                                                                   a.max() > hi)):
        raise ParameterError(f"{name} must be whole numbers in {lo}..{hi}, one per particle "
                             f"(shape ({n},)) or one for all; got {value!r}")
    return a


class ReadOnlyArray(np.ndarray):
    """A copy of an engine's array handed to the user: writing into it raises ParameterError
    (a ValueError) with `hint`, what to do instead, since the write would reach no engine.
    Arithmetic on it gives plain arrays; its .copy() is writeable."""

    hint = "this array is a read-only copy"

    def __array_finalize__(self, obj):
        self.hint = getattr(obj, "hint", ReadOnlyArray.hint)

    def __setitem__(self, key, value):
        if not self.flags.writeable:
            raise ParameterError(self.hint)
        super().__setitem__(key, value)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        for a in out or ():
            if isinstance(a, ReadOnlyArray) and not a.flags.writeable:
                raise ParameterError(a.hint)
        plain = tuple(x.view(np.ndarray) if isinstance(x, ReadOnlyArray) else x
                      for x in inputs)
        if out is not None:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, ReadOnlyArray) else x
                                  for x in out)
        return getattr(ufunc, method)(*plain, **kwargs)


def read_only(array: np.ndarray, hint: str) -> ReadOnlyArray:
    """`array` (owned by the caller, not shared) as a ReadOnlyArray that says `hint` when
    written to."""
    view = np.asarray(array).view(ReadOnlyArray)
    view.hint = hint
    view.flags.writeable = False
    return view
