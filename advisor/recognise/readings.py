"""A counter's readings over the daemon's window, kept short: a reading is added only when the
counter moved, and those older than the one in force at the window's start are dropped."""
from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def add_reading(series: list[tuple[float, T]], at: float, value: T, start: float) -> T | None:
    """Adds `value` read at `at` to `series` (oldest first); the value in force at `start`, or None
    when the series began after it (then the window does not cover the counter yet)."""
    if not series or series[-1][1] != value:
        series.append((at, value))
    while len(series) > 1 and series[1][0] <= start:
        del series[0]
    return series[0][1] if series[0][0] <= start else None
