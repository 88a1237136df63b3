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
import sys
from collections.abc import Iterator
from typing import TypeVar

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


def printable_text(raw: str, what: str) -> str:
    """`raw` without surrounding blanks, or ParseError when it holds what no kernel file or
    command prints for a value: control characters or bytes that were not UTF-8 (read as U+FFFD)."""
    value = raw.strip()
    if not value.isprintable() or "\ufffd" in value:
        raise ParseError(f"{what}: {shown(value)} is not printable text")
    return value


def whole_lines(text: str, what: str) -> str:
    """`text`, or ParseError when it stops inside a line: every line a command or kstat prints
    ends with a newline, so output without one at its end was cut short."""
    if text and not text.endswith("\n"):
        raise ParseError(f"{what}: ends inside a line (cut short): {shown(text[-40:])}")
    return text


def lines_in_blocks(text: str, block: int = 1 << 20) -> Iterator[str]:
    """`text.splitlines()`, made about `block` characters at a time: the lines of a 10 MB
    command output (`zfs get` at 10,000 datasets) are not all alive at once, so the
    long-lived facts parsed from them are not scattered among their freed pages."""
    start, end = 0, len(text)
    while start < end:
        cut = text.find("\n", start + block)
        cut = end if cut < 0 else cut + 1
        yield from text[start:cut].splitlines()
        start = cut


V = TypeVar("V")

# Classes whose instances' attribute dicts share one key table, one class per tuple of names.
_ROW_CLASSES: dict[tuple[str, ...], type] = {}
_MAX_ROW_CLASSES = 64
_MAX_SHARED_KEYS = 30  # CPython shares at most 30 keys (SHARED_KEYS_MAX_SIZE, Objects/dictobject.c)


def compact_dict(items: dict[str, V]) -> dict[str, V]:
    """The same mapping as a dict whose key table is shared with every other dict of the same
    names in the same order (CPython's split-table dicts, PEP 412): at 10,000 datasets, one
    properties dict and one I/O counter dict each, about 830 bytes a dict become 300.

    It is a plain `dict` (equal, serialised and copied like any), made as the attribute dict of
    an instance of a class kept for that tuple of names.  Names that could be a class's own
    attributes (dunder names), or too many names, get the dict back unchanged."""
    names = tuple(items)
    if not 0 < len(names) <= _MAX_SHARED_KEYS or any(type(n) is not str or n.startswith("__") for n in names):
        return items
    cls = _ROW_CLASSES.get(names)
    if cls is None:
        if len(_ROW_CLASSES) >= _MAX_ROW_CLASSES:
            return items
        cls = _ROW_CLASSES[names] = type("_Row", (), {})
    row = cls()
    for name, value in items.items():
        setattr(row, name, value)
    return row.__dict__


def interned(name: str) -> str:
    """One shared string object per distinct name: property and counter names repeat on every
    dataset (28 `zfs get` properties and 27 objset counters each, 550,000 strings at 10,000
    datasets), and one copy of each is enough."""
    return sys.intern(name)
