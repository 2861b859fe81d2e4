"""Simulation parameters with their meaning and allowed ranges."""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, replace

from galaxyview.errors import ParameterError
from galaxyview.model.sheet import Sheet

THETA_MAX = 1.5
F32_MAX = 3.4028234663852886e38  # the largest float32: particle data and GPU arithmetic
F32_TINY = 1.1754944e-38  # the smallest normal float32: smaller is 0 (or lost precision)
INT_MAX = 2**53  # the largest whole number an option or value may be (exact as a float64)
EPS_MAX = 1.0e19  # eps**2 stays finite in float32
TREE_MAX_LEVEL = 21  # deepest octree level: 63-bit Morton keys, 21 bits per axis
BLOCK_LEVELS_MAX = 40  # block steps are dt / 2^k; time is counted in 2^-40 dt ticks
MODULE_KINDS = ("integrator", "boundary", "collision")
MACS = ("bonsai", "acceleration")  # multipole acceptance criteria of the tree walk
_MODULE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")


@dataclass(frozen=True)
class Params:
    """Parameters of the gravity solver and the integrator (N-body units, G = 1).

    theta: opening angle of the multipole acceptance criterion d > l/theta + delta, 0 < theta <= 1.5
    dt: shared leapfrog time step, > 0
    eps: Plummer softening length, >= 0
    n_leaf: most particles in a leaf cell (cells at the deepest key level may hold more)
    n_crit: most particles in a group that walks the tree together
    G: gravitational constant (1 in N-body units)
    eta: accuracy of per-particle time steps, 0 < eta <= 1, smaller is more accurate (Aarseth's
      criterion for the Hermite integrators; sqrt(2 eta eps / |a|) for the hierarchical leapfrog)
    block_levels: deepest level of block time steps: the smallest step is dt / 2^block_levels
      (dt is then the largest step and the interval at which all particles are synchronised)
    mac: the tree's multipole acceptance criterion: "bonsai" (Bonsai's d > l/theta + delta: l the
      longest side of the box of the cell's particles, delta from its centre to the centre of
      mass, d from the group's box to the centre of mass) or
      "acceleration" (GADGET's relative one: G M l^2 / d^4 <= alpha |a_old|, and d > l + delta)
    alpha: tolerance of the acceleration MAC, 0 < alpha <= 1 (smaller is more accurate)
    integrator, boundary, collision: the physics modules by name (engines.modules lists them;
    the engine checks the names when it is created)
    sheet: the shearing sheet of the ring modules (model/sheet.py: Omega, box, ghost rings,
      restitution law); None elsewhere
    """

    theta: float = 0.75
    dt: float = 1.0 / 64
    eps: float = 0.05
    n_leaf: int = 16
    n_crit: int = 64
    G: float = 1.0
    eta: float = 0.02
    block_levels: int = 30
    mac: str = "bonsai"
    alpha: float = 0.0025
    integrator: str = "leapfrog"
    boundary: str = "open"
    collision: str = "none"
    sheet: "Sheet | None" = None

    def __post_init__(self):
        for name, check in (("theta", check_theta), ("dt", check_dt), ("eps", check_eps),
                            ("G", check_g)):
            object.__setattr__(self, name, check(getattr(self, name)))
        if not (isinstance(self.n_leaf, int) and 1 <= self.n_leaf <= 64):
            raise ParameterError(f"n_leaf must be an integer in 1..64, got {self.n_leaf!r}")
        if not (isinstance(self.n_crit, int) and self.n_leaf <= self.n_crit <= 1024):
            raise ParameterError(
                f"n_crit must be an integer in n_leaf..1024, got {self.n_crit!r}"
            )
        object.__setattr__(self, "eta", check_eta(self.eta))
        if not (isinstance(self.block_levels, int) and not isinstance(self.block_levels, bool)
                and 0 <= self.block_levels <= BLOCK_LEVELS_MAX):
            raise ParameterError(f"block_levels must be an integer in 0..{BLOCK_LEVELS_MAX}, "
                                 f"got {self.block_levels!r}")
        if self.mac not in MACS:
            raise ParameterError(f"mac must be one of {', '.join(MACS)}, got {self.mac!r}")
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        for kind in MODULE_KINDS:
            check_module_name(kind, getattr(self, kind))
        if isinstance(self.sheet, dict):  # as archives store it
            try:
                object.__setattr__(self, "sheet", Sheet(**self.sheet))
            except TypeError as exc:
                raise ParameterError(f"sheet: {exc}") from None
        if self.sheet is not None and not isinstance(self.sheet, Sheet):
            raise ParameterError(f"sheet must be a Sheet (model/sheet.py), got {self.sheet!r}")

    def with_(self, **changes) -> "Params":
        """A copy with some values changed (None values are ignored), checked again."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _finite(x) -> bool:
    """A real number (not a bool, not a string: "0.1" is refused, not converted), finite."""
    return (isinstance(x, numbers.Real) and not isinstance(x, bool)
            and math.isfinite(float(x)))


def float32_problem(x) -> str | None:
    """The one rule for values galaxyview computes with in float32 (scene values, command-line
    options, API parameters, snapshot values): None when finite `x` is 0 or within float32's
    normal range; else the words that follow the value in the error."""
    if abs(x) > F32_MAX:
        return f"is too large: galaxyview computes in float32 (at most {F32_MAX:.3g})"
    if 0 < abs(x) < F32_TINY:
        return (f"is too small: galaxyview computes in float32 (a value other than 0 is at "
                f"least {F32_TINY:.3g})")
    return None


def integer_problem(x) -> str | None:
    """The one rule for whole numbers: None when |x| <= 2^53, else the words of the error."""
    return None if abs(x) <= INT_MAX else f"is too large (a whole number is at most 2^53)"


def _number(name: str, x, allowed: str) -> ParameterError:
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        if math.isfinite(float(x)) and float32_problem(float(x)):
            return ParameterError(f"{name} = {x!r}: {float32_problem(float(x))}")
        return ParameterError(f"{name} must be {allowed}, got {x!r}")
    return ParameterError(f"{name} must be a number ({allowed}), got {x!r} of type "
                          f"{type(x).__name__}")


def _f32(x) -> bool:
    """Finite and within the float32 rule."""
    return _finite(x) and float32_problem(float(x)) is None


def check_theta(theta) -> float:
    if not (_f32(theta) and 0 < float(theta) <= THETA_MAX):
        raise _number("theta", theta, f"in (0, {THETA_MAX}]; smaller is more accurate and "
                                      "slower, 0.4-0.8 is usual")
    return float(theta)


def _check_positive(name: str):
    """A checker of a positive number no larger than float32 allows, named `name`."""
    def check(x) -> float:
        if not (_f32(x) and 0 < float(x) <= F32_MAX):
            raise _number(name, x, f"a positive number, at most {F32_MAX:.3g} (a float32)")
        return float(x)
    return check


check_dt = _check_positive("dt")
check_g = _check_positive("G")


def check_eps(eps) -> float:
    if not (_f32(eps) and 0 <= float(eps) <= EPS_MAX):
        raise _number("eps (softening)", eps,
                      f">= 0 and at most {EPS_MAX:g} (eps squared must fit a float32, or "
                      "gravity would vanish)")
    return float(eps)


def check_eta(eta) -> float:
    if not (_f32(eta) and 0 < float(eta) <= 1):
        raise _number("eta", eta, "in (0, 1]; 0.01-0.03 is usual for Hermite, smaller is more "
                                  "accurate and slower")
    return float(eta)


def check_alpha(alpha) -> float:
    if not (_f32(alpha) and 0 < float(alpha) <= 1):
        raise _number("alpha", alpha, "in (0, 1]; 0.001-0.005 is usual for the acceleration "
                                      "MAC, smaller is more accurate and slower")
    return float(alpha)


def check_module_name(kind: str, name) -> str:
    """A physics module's name: lower-case letters, digits, '-' and '_' (the engine checks
    that a module of that name exists)."""
    if not (isinstance(name, str) and _MODULE_NAME.fullmatch(name)):
        raise ParameterError(f"{kind} must be a module name such as 'leapfrog' (lower-case "
                             f"letters, digits, '-', '_'), got {name!r}")
    return name
