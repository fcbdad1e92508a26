"""argparse types for numbers on the command line: finite, in range, or one line naming the flag.

`float("nan")`, `float("inf")`, `-5` and `1e400` all parse as floats; a timeout of NaN never
expires and a negative one expires at once, so every number a command takes goes through here.
"""
from __future__ import annotations

import argparse
import math
from typing import Callable

from conformance.sanitize import terminal


def number(kind: type[int] | type[float], minimum: float, maximum: float, *, exclusive_minimum: bool = False) -> Callable[[str], float]:
    """An argparse `type` accepting a finite `kind` (int or float) in [minimum, maximum]."""
    low = f"> {minimum:g}" if exclusive_minimum else f">= {minimum:g}"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            value = math.nan
        if not math.isfinite(value) or value > maximum or value < minimum \
                or (exclusive_minimum and value == minimum):
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'} {low} and "
                                             f"<= {maximum:g}, got {terminal(text, limit=40)!r}")
        return value

    parse.__name__ = f"{kind.__name__} in range"
    return parse


seconds = number(float, 0, 7 * 24 * 3600, exclusive_minimum=True)  # a positive, finite time bound
count = number(int, 0, 1_000_000)
