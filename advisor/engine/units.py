"""Sizes as ZFS writes them: '32K' <-> 32768 (powers of 1024, like zfs_nicenum)."""
from __future__ import annotations

import re

_SUFFIX = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(value: object) -> int:
    """'32K', '32KiB', '1M', '4096', 4096 -> bytes; raises ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"negative size: {value}")
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if not isinstance(value, str) or len(value) > 32:
        raise ValueError(f"not a size: {value!r}")
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"not a size: {value!r} (expected e.g. 512, 4K, 128K, 1M)")
    number = float(m.group(1)) * _SUFFIX[m.group(2).upper()]
    if not number.is_integer():
        raise ValueError(f"not a whole number of bytes: {value!r}")
    return int(number)


def format_size(n: int | float | None) -> str:
    """32768 -> '32K', 1536 -> '1.5K', 1048576 -> '1M' (the largest unit that reads well)."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("", "K", "M", "G", "T"):
        if abs(value) < 1024 or unit == "T":
            if value.is_integer():
                return f"{int(value)}{unit or 'B'}" if unit == "" else f"{int(value)}{unit}"
            return f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}P"  # pragma: no cover - loop returns at "T"


# Properties and module parameters whose raw form (`zfs get -p`, the parameter files, the lab's
# CSV) is a number of bytes.
SIZE_PARAMETERS = frozenset({"recordsize", "volblocksize", "special_small_blocks", "zfs_dirty_data_max",
                             "zfs_arc_max"})


def shown_value(parameter: str, value: str) -> str:
    """A raw value as a reader sees it: 16384 bytes of recordsize reads as 16K, others as they are."""
    return format_size(int(value)) if parameter in SIZE_PARAMETERS and value.isdigit() else value
