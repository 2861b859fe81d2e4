"""What the commands print: JSON results, notes on stderr and progress bars."""
from __future__ import annotations

import json
import sys
from contextlib import contextmanager

from tqdm import tqdm


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, default=float))


def say(text: str) -> None:
    """Notes for people go to stderr, so --json output stays clean."""
    print(text, file=sys.stderr)


@contextmanager
def progress_bar(total: int, desc: str, unit: str = "step"):
    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
               disable=None)  # None: off when stderr is not a terminal
    try:
        yield bar.update
    finally:
        bar.close()
