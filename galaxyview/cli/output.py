"""What the commands print: JSON results, notes on stderr and progress bars."""
from __future__ import annotations

import json
import logging
import math
import sys
from contextlib import contextmanager

import numpy as np
from tqdm import tqdm

from galaxyview import progress


def print_json(obj) -> None:
    """Strict JSON: a NaN or infinity becomes null, with the reason under "reasons"."""
    reasons = {}
    clean = _finite(obj, "", reasons)
    if reasons and isinstance(clean, dict):
        clean["reasons"] = {**(clean.get("reasons") or {}), **reasons}
    print(json.dumps(clean, indent=2, default=float, allow_nan=False))


def _finite(obj, where: str, reasons: dict):
    if isinstance(obj, dict):
        return {k: _finite(v, f"{where}.{k}" if where else str(k), reasons)
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v, f"{where}[{i}]", reasons) for i, v in enumerate(obj)]
    if isinstance(obj, (float, np.floating)):
        if not math.isfinite(obj):
            reasons.setdefault(where, f"not a finite number ({float(obj)})")
            return None
        return float(obj)
    return obj


def say(text: str) -> None:
    """Notes for people go to stderr, so --json output stays clean."""
    print(text, file=sys.stderr)


class WarningLines(logging.Handler):
    """The library's log records (logging.getLogger("galaxyview.*")) as one plain line each
    on the current stderr: "galaxyview: warning: ..." (above a progress bar, if one runs)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(f"galaxyview: {record.levelname.lower()}: {record.getMessage()}",
                       file=sys.stderr)
        except Exception:
            self.handleError(record)


def show_library_warnings() -> None:
    """Warnings and errors of the "galaxyview" loggers go to stderr (once per process)."""
    logger = logging.getLogger("galaxyview")
    if not any(isinstance(h, WarningLines) for h in logger.handlers):
        logger.addHandler(WarningLines(logging.WARNING))


@contextmanager
def progress_bar(total: int, desc: str, unit: str = "step"):
    bar = progress.bar(total, desc, unit)  # (lines in a log)
    try:
        yield bar.update
    finally:
        bar.close()


@contextmanager
def making_bar(least: int | None = None):
    """progress(k, n) for open_simulation: a bar of the particles made, opened at the first
    call where n >= least (default simulation.PROGRESS_FROM; smaller scenes are made at
    once)."""
    if least is None:
        from galaxyview.simulation import PROGRESS_FROM as least
    bars = []

    def update(k: int, n: int) -> None:
        if n < least:
            return
        if not bars:
            bars.append(progress.bar(n, "making the particles", "particle", unit_scale=True))
        bars[0].update(k)

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()
