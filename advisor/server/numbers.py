"""Whole numbers from a request (a query parameter, a path segment): the digits are counted before
anything converts them, so no request makes int() work on thousands of digits or raise (Python
refuses more than 4,300, https://docs.python.org/3/library/stdtypes.html#int-max-str-digits), and
a value out of range is a 400 whose `valid` is the range."""
from __future__ import annotations

from advisor.server.errors import json_error


def whole_number(text: str, what: str, low: int, high: int) -> int:
    """`text` as an int from `low` to `high`; else the 400 JSON error (raised)."""
    if 0 < len(text) <= len(str(high)) and text.isascii() and text.isdigit():  # "²".isdigit(), but int("²") fails
        value = int(text)
        if low <= value <= high:
            return value
    raise json_error(400, f"{what} must be a whole number from {low} to {high}, not {text[:32]!r}",
                     valid=[f"{low}-{high}"])
