"""Files beside a Tipsy snapshot that carry what its binary records have no field for.

- ChaNGa-style ASCII auxiliary arrays `<snapshot>.<name>`: the particle count on the first line,
  then one value a line in the file's particle order (gas, dark, star). galaxyview writes
  `component` (Component codes), `galaxy` (galaxy index) and `radius` (hard-sphere radii);
  pynbody and ChaNGa's tools read them as arrays of those names.
- A ChaNGa parameter file `<snapshot>.param` ("key = value" lines, # comments; reading, also a
  run's `*.param` in the snapshot's folder or its parent, `find_param`): dKpcUnit and
  dMsolUnit (the unit system, where the run has one: pynbody takes its units from them), dDelta
  (the time step), dTheta (the opening angle), dSoft (the softening; the particles' eps fields
  hold it too) and, as comments, the integrator, boundary and collision by name, G where it is
  not 1 and the ring modules' shearing sheet (JSON). Reading, also
  bDoublePos and bDoubleVel (ChaNGa's double-precision snapshots).
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError, SnapshotError
from galaxyview.files import read_bytes
from galaxyview.model.params import Params
from galaxyview.model.state import Component
from galaxyview.model.units import UnitSystem

AUX_ARRAYS = ("component", "galaxy", "radius")
_LIMITS = {"component": (0, max(Component)), "galaxy": (0, int(np.iinfo(np.int16).max))}
_LAYOUT = "an auxiliary array file holds the particle count on its first line, then one value a line"


def aux_path(path, name: str) -> Path:
    """The auxiliary array file `name` beside snapshot `path`: `<snapshot path>.<name>`."""
    path = Path(path)
    return path.with_name(f"{path.name}.{name}")


def param_path(path) -> Path:
    """The parameter file galaxyview writes beside snapshot `path`: `<snapshot path>.param`."""
    return aux_path(path, "param")


def find_param(path) -> Path:
    """The parameter file of snapshot `path`: `<snapshot path>.param` when there is one, else,
    as pynbody looks, a `*.param` in the snapshot's folder, then its parent, of this run: its
    achOutName (or, without one, its own name less .param) followed by "." starts the
    snapshot's name (run.param, achOutName = run: run.00100). `param_path(path)` when none is."""
    path = Path(path)
    own = param_path(path)
    if own.is_file():
        return own
    for folder in (path.parent, path.parent.parent):
        try:
            candidates = sorted(folder.resolve().glob("*.param"))
        except OSError:
            continue
        for candidate in candidates:
            if path.name.startswith(f"{_out_name(candidate)}."):
                return candidate
    return own


def _out_name(pfile: Path) -> str:
    """The output prefix a ChaNGa parameter file names (achOutName's last part), else its
    name less .param."""
    try:
        text = pfile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    for line in text.splitlines():
        key, eq, value = line.split("#")[0].partition("=")
        if eq and key.strip() == "achOutName":
            return Path(value.strip().strip("\"'")).name
    return pfile.stem


def _lines(aux: Path, binary: str = f"not a text file; {_LAYOUT}") -> list[str] | None:
    """The file's lines, trailing blank ones dropped; None when there is none; SnapshotError
    `binary` when it is not text."""
    try:
        text = read_bytes(aux, SnapshotError, "text file").decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise SnapshotError(f"{aux}: {binary}") from None
    except OSError as exc:
        raise SnapshotError(f"{aux}: cannot read it ({exc.strerror or exc})") from None
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def read_aux(path, name: str, n: int) -> np.ndarray | None:
    """Array `name` (radius: float32 >= 0; component, galaxy: integers in range) from the file
    beside snapshot `path` of `n` particles; None when there is none; SnapshotError naming the
    file and line when it is bad."""
    aux = aux_path(path, name)
    lines = _lines(aux)
    if lines is None:
        return None
    if not lines:
        raise SnapshotError(f"{aux}: the file is empty; {_LAYOUT}")
    try:
        count = int(lines[0])
    except ValueError:
        raise SnapshotError(f"{aux}: line 1: {lines[0].strip()!r} is not a particle count; "
                            f"{_LAYOUT}") from None
    if count != n:
        raise SnapshotError(f"{aux}: line 1 gives {count} particles but the snapshot {path} has "
                            f"{n}; the file belongs to another snapshot")
    values = lines[1:]
    if len(values) != n:
        raise SnapshotError(f"{aux}: {len(values)} values after the count line, {n} expected; "
                            f"the file is truncated or corrupt")
    numbers = np.empty(n, np.float64)
    for i, word in enumerate(values):
        try:
            numbers[i] = float(word)
        except ValueError:
            raise SnapshotError(f"{aux}: line {i + 2}: {word.strip()!r} is not a number; "
                                f"{_LAYOUT}") from None
    if name == "radius":
        return _radii(aux, numbers, values)
    lo, hi = _LIMITS.get(name, (-2**31, 2**31 - 1))
    bad = np.flatnonzero(~((numbers == np.round(numbers)) & (numbers >= lo) & (numbers <= hi)))
    if len(bad):
        raise SnapshotError(f"{aux}: line {bad[0] + 2}: {values[bad[0]].strip()} is not a "
                            f"whole number in {lo}..{hi}")
    return numbers.astype(np.int64)


def _radii(aux: Path, radius: np.ndarray, values: list[str]) -> np.ndarray:
    with np.errstate(over="ignore"):
        radius32 = radius.astype(np.float32)
    bad = np.flatnonzero(~(np.isfinite(radius32) & (radius32 >= 0)))
    if len(bad):
        value = radius[bad[0]]
        why = ("is not finite" if not np.isfinite(value) else "is negative" if value < 0 else
               "is too large for float32")
        raise SnapshotError(f"{aux}: line {bad[0] + 2}: radius {values[bad[0]].strip()} {why}; "
                            f"radii must be finite and >= 0")
    return radius32


def aux_text(values: np.ndarray) -> str:
    """The ASCII file of `values` (9 significant digits: float32 values exactly)."""
    if np.issubdtype(values.dtype, np.integer):
        body = "".join(f"{v}\n" for v in values.tolist())
    else:
        body = "".join(f"{v:.9g}\n" for v in values.tolist())
    return f"{len(values)}\n{body}"


def param_text(params: Params, units: UnitSystem | None) -> str:
    """The parameter file of a snapshot written with `params` in `units` (or N-body units)."""
    lines = ["# written by galaxyview beside its Tipsy snapshot (ChaNGa parameter names)"]
    if units is not None:
        lines += [f"dKpcUnit = {units.length_kpc!r}", f"dMsolUnit = {units.mass_msun!r}"]
    elif params.G != 1.0:
        lines.append(f"# the scene's own units (G = {params.G!r}; SI for ring scenes): no "
                     f"dKpcUnit, dMsolUnit")
    else:
        lines.append("# N-body units (G = 1) without a physical scale: no dKpcUnit, dMsolUnit")
    lines += [f"dDelta = {params.dt!r}", f"dTheta = {params.theta!r}",
              f"dSoft = {params.eps!r}", "bComove = 0",
              f"# galaxyview integrator = {params.integrator}",
              f"# galaxyview boundary = {params.boundary}",
              f"# galaxyview collision = {params.collision}"]
    if params.G != 1.0:
        lines.append(f"# galaxyview G = {params.G!r}")
    if params.sheet is not None:  # the ring modules' shearing sheet (model/sheet.py)
        lines.append(f"# galaxyview sheet = {json.dumps(dataclasses.asdict(params.sheet))}")
    return "\n".join(lines) + "\n"


_PARAM_KEYS = {"dDelta": "dt", "dTheta": "theta", "dSoft": "eps"}


_OWN_KEYS = ("integrator", "boundary", "collision", "G", "sheet")  # '# galaxyview' lines
_PRECISION_KEYS = {"bDoublePos": "pos", "bDoubleVel": "vel"}  # -> the field stored as float64
# a snapshot's precision -> its fields stored as float64
PRECISIONS = {"single": (), "double positions": ("pos",), "double": ("pos", "vel"),
              "double velocities": ("vel",)}


def read_param(path) -> tuple[dict, UnitSystem | None, str | None]:
    """({"dt", "theta", "eps", "integrator", ... found}, units or None, the snapshot's precision
    (bDoublePos, bDoubleVel) or None) from the parameter file beside snapshot `path`; ({}, None,
    None) without one. Keys galaxyview has no use for are skipped."""
    pfile = find_param(path)
    lines = _lines(pfile, "not a text parameter file; a Tipsy .param file holds 'key = value' "
                          "lines (dDelta, dTheta, dSoft, dKpcUnit, dMsolUnit): replace or "
                          "remove it")
    if lines is None:
        return {}, None, None
    found, unit, double = {}, {}, {}
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if text.startswith("# galaxyview "):
            key, _, value = (part.strip() for part in text[len("# galaxyview "):].partition("="))
            if key in _OWN_KEYS and value:
                found[key] = _checked(pfile, f"'# galaxyview {key}'", key,
                                      _own_value(pfile, number, key, value))
            continue
        key, eq, value = text.split("#")[0].partition("=")
        key = key.strip()
        if not eq or key not in (*_PARAM_KEYS, *_PRECISION_KEYS, "dKpcUnit", "dMsolUnit"):
            continue
        try:
            number_value = float(value)
        except ValueError:
            raise SnapshotError(f"{pfile}: line {number}: {key} = {value.strip()!r} is not a "
                                f"number") from None
        if key in _PARAM_KEYS:
            found[_PARAM_KEYS[key]] = _checked(pfile, key, _PARAM_KEYS[key], number_value)
        elif key in _PRECISION_KEYS:
            if number_value not in (0, 1):
                raise SnapshotError(f"{pfile}: line {number}: {key} = {value.strip()} must be 0 "
                                    f"or 1; correct that line or remove it")
            double[_PRECISION_KEYS[key]] = bool(number_value)
        else:
            unit[key] = number_value
    units = None
    if unit:
        if set(unit) != {"dKpcUnit", "dMsolUnit"} or not all(
                math.isfinite(v) and v > 0 for v in unit.values()):
            raise SnapshotError(f"{pfile}: dKpcUnit and dMsolUnit must both be given, finite "
                                f"and > 0, got {unit}")
        units = UnitSystem(unit["dKpcUnit"], unit["dMsolUnit"])
    wide = tuple(field for field in ("pos", "vel") if double.get(field))
    precision = next(p for p, f in PRECISIONS.items() if f == wide) if double else None
    return found, units, precision


def _own_value(pfile: Path, number: int, key: str, value: str):
    """The value of a '# galaxyview key = value' line: a module name, G (a number) or the
    sheet (JSON of model/sheet.py's Sheet)."""
    try:
        return float(value) if key == "G" else json.loads(value) if key == "sheet" else value
    except ValueError:
        what = "a number" if key == "G" else "the shearing sheet's JSON"
        raise SnapshotError(f"{pfile}: line {number}: {key} = {value!r} is not {what}; "
                            f"correct that line or remove it") from None


def _checked(pfile: Path, key: str, name: str, value):
    """`value` of Params field `name` as Params checks it; SnapshotError naming the file and
    the key `key` when it is out of range."""
    try:
        Params().with_(**{name: value})
    except GalaxyviewError as exc:
        raise SnapshotError(f"{pfile}: {key}: {exc}; correct that line or remove it") from None
    return value
