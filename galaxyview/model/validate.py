"""Typed, range-checked reads from a parsed TOML table, with errors that name the file and key."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from galaxyview.errors import SceneError
from galaxyview.files import read_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_MISSING = object()
from galaxyview.model.params import (F32_MAX, F32_TINY, float32_problem,  # noqa: F401
                                     integer_problem)


class Table:
    """A view of one TOML table. `where` is the dotted key path of the table (e.g. 'galaxy[1]').

    Every read names the file, the key, the bad value and what is allowed when it fails.
    `finish()` rejects keys nobody read (typos).
    """

    def __init__(self, data: dict, source: str | Path = "<scene>", where: str = ""):
        if not isinstance(data, dict):
            raise SceneError(f"{source}: [{where}] must be a table, got {data!r}")
        self.data = data
        self.source = str(source)
        self.where = where
        self._read: set[str] = set()

    def key_path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, value, allowed: str) -> SceneError:
        return SceneError(f"{self.source}: {self.key_path(key)} = {value!r}: {allowed}")

    def _get(self, key, default):
        self._read.add(key)
        if key in self.data:
            return self.data[key]
        if default is _MISSING:
            raise SceneError(f"{self.source}: {self.key_path(key)} is missing (required)")
        return default

    def number(self, key, default=_MISSING, *, lo=None, hi=None, lo_open=False, hi_open=False):
        """A float (ints accepted) within [lo, hi] (open ends with lo_open / hi_open)."""
        value = self._get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(key, value, "must be a finite number")
        if float32_problem(value):
            raise self.error(key, value, float32_problem(value))
        bad_lo = lo is not None and (value <= lo if lo_open else value < lo)
        bad_hi = hi is not None and (value >= hi if hi_open else value > hi)
        if bad_lo or bad_hi:
            raise self.error(key, value, "must be " + _range_text(lo, hi, lo_open, hi_open))
        return float(value)

    def integer(self, key, default=_MISSING, *, lo=None, hi=None):
        value = self._get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, value, "must be an integer")
        if integer_problem(value):
            raise self.error(key, value, integer_problem(value))
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise self.error(key, value, "must be an integer " + _range_text(lo, hi))
        return int(value)

    def string(self, key, default=_MISSING, *, choices=None):
        value = self._get(key, default)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.error(key, value, "must be a string")
        if choices is not None and value not in choices:
            raise self.error(key, value, f"must be one of {', '.join(map(repr, choices))}")
        return value

    def boolean(self, key, default=_MISSING) -> bool | None:
        value = self._get(key, default)
        if value is not None and not isinstance(value, bool):
            raise self.error(key, value, "must be true or false")
        return value

    def vector(self, key, default=_MISSING, *, length=3):
        value = self._get(key, default)
        if value is None:
            return None
        ok = (isinstance(value, list) and len(value) == length and
              all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                  for v in value))
        if not ok:
            raise self.error(key, value, f"must be a list of {length} finite numbers")
        problem = next(filter(None, map(float32_problem, value)), None)
        if problem:
            raise self.error(key, value, problem)
        return [float(v) for v in value]

    def table(self, key, default=_MISSING) -> "Table | None":
        value = self._get(key, default)
        if value is None:
            return None
        return Table(value, self.source, self.key_path(key))

    def tables(self, key, default=_MISSING) -> list["Table"]:
        """An array of tables ([[key]] in TOML)."""
        value = self._get(key, default)
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.error(key, value, "must be an array of tables ([[...]])")
        return [Table(v, self.source, f"{self.key_path(key)}[{i}]") for i, v in enumerate(value)]

    def finish(self) -> None:
        """Raise on keys that were never read: usually a typo."""
        unknown = sorted(set(self.data) - self._read)
        if unknown:
            known = ", ".join(sorted(self._read)) or "none"
            raise SceneError(
                f"{self.source}: unknown key(s) {', '.join(self.key_path(k) for k in unknown)}; "
                f"known here: {known}"
            )


def _range_text(lo, hi, lo_open=False, hi_open=False) -> str:
    """'in [0, 1)', '> 0', '<= 5' ... for error messages (whole numbers written out)."""
    lo_t, hi_t = _bound(lo), _bound(hi)
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{lo_t}, {hi_t}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {lo_t}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {hi_t}"
    return "a number"


def _bound(x) -> str:
    if x is None:
        return ""
    return f"{x:,}".replace(",", "_") if isinstance(x, int) and abs(x) >= 10**6 else f"{x:g}"


def parse_toml(data: bytes, path) -> dict:
    """The TOML document `data` read from `path` (a UTF-8 byte-order mark at its start is
    skipped); SceneError naming the file when it is not UTF-8, not TOML or nested too deep."""
    try:
        return tomllib.loads(data.decode("utf-8").removeprefix("\ufeff"))
    except UnicodeDecodeError:
        raise SceneError(f"{path}: not UTF-8 text; is it a TOML file?") from None
    except tomllib.TOMLDecodeError as exc:
        raise SceneError(f"{path}: TOML syntax error: {exc}") from None
    except RecursionError:
        raise SceneError(f"{path}: arrays or tables nested too deep to read; is it a "
                         f"TOML file?") from None


def read_toml(path: Path, what: str) -> dict:
    """The parsed TOML file `path` (a `what`: "playlist", "camera path"); SceneError saying
    what is wrong with it."""
    try:
        data = read_bytes(path, SceneError, f"{what} file")
    except FileNotFoundError:
        raise SceneError(f"{path}: no such {what} file") from None
    except OSError as exc:
        raise SceneError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return parse_toml(data, path)
