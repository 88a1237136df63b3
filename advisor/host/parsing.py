"""The one convention every parser in advisor/host follows.

A parser takes text and returns what it understood, or raises `ParseError`
with a one-line reason when the text is not what it expects (garbage, a
truncated write, a value outside its declared type). It never raises
anything else, and it never returns "nothing" for text it did not
understand: an empty result means the source really has nothing (no pools,
no block devices). The collector turns a `ParseError` into "no data" for
that source alone (`SourceStatus(ok=False, reason=...)`, `zfs_advisor_source_up` 0).
"""
from __future__ import annotations

import math

# The widest integer a kstat or a counter can hold (uint64).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


class ParseError(ValueError):
    """The text is not what the parser understands; `str(exc)` says why (one line)."""


def shown(text: str, limit: int = 60) -> str:
    """A bounded repr of a piece of input, for reasons."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def to_int(text: str, what: str) -> int:
    """An integer within uint64/int64 range, or ParseError naming `what`."""
    try:
        value = int(text)
    except ValueError:
        raise ParseError(f"{what}: {shown(text)} is not an integer") from None
    if not INT_MIN <= value <= INT_MAX:
        raise ParseError(f"{what}: {shown(text)} is out of the 64-bit range")
    return value


def to_float(text: str, what: str) -> float:
    """A finite float, or ParseError naming `what`."""
    try:
        value = float(text)
    except ValueError:
        raise ParseError(f"{what}: {shown(text)} is not a number") from None
    if not math.isfinite(value):
        raise ParseError(f"{what}: {shown(text)} is not a finite number")
    return value
