"""Stored rows parsed where they are read: a row that does not parse (a type SQLite let through, a
number no measurement has, JSON that is not JSON, a status or scope this code does not know) is
skipped and counted (advisor/store/reader_health.py), so one damaged row costs itself, not the answer
that reads it.

SQLite's column types are affinities, not constraints (https://www.sqlite.org/datatype3.html):
a REAL column keeps 'abc' as text, and a CHECK is not applied under
`PRAGMA ignore_check_constraints` or by another program writing the file.
"""
from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from advisor.store import reader_health

T = TypeVar("T")
UNPARSED = (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError)  # pydantic's are ValueErrors

# The most a stored measurement can be: beyond it the row is damaged, not measured. No pool does
# a billion IOPS or 10 TB/s; no latency of a probe's I/O lasts an hour.
MOST: dict[str, float] = {
    "iops": 1e9, "read_iops": 1e9, "write_iops": 1e9, "read_bw": 1e13, "write_bw": 1e13,
    **{f"{side}_{p}": 3600.0 for side in ("read", "write") for p in ("p50", "p99", "p999")}, "sync_p99": 3600.0,
    "cpu_user": 1e5, "cpu_system": 1e5,  # fio's percent of a CPU, summed over its jobs
    "runtime_seconds": 1e7, "compress_ratio": 1e6, "arc_hit_ratio": 1.0, "compress_percentage": 1e6,
    "started_at": 1e11, "ended_at": 1e11, "stopped_at": 1e11, "queued_at": 1e11, "detected_at_epoch": 1e11,
    "measured_at": 1e11,
}


def plausible(values: dict[str, Any]) -> dict[str, Any]:
    """`values` when every number in it is finite, not negative and at most its MOST; else ValueError."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value) or value < 0 or value > MOST.get(name, math.inf):
            raise ValueError(f"{name} = {value!r} is no measurement")
    return values


def parsed(table: str, rows: Iterable[sqlite3.Row], build: Callable[[sqlite3.Row], T]) -> list[T]:
    """`build(row)` of each row; a row it cannot build is skipped and counted."""
    out = []
    for row in rows:
        try:
            out.append(build(row))
        except UNPARSED as exc:
            reader_health.row_skipped(table, _id(row), f"{type(exc).__name__}: {exc}")
    return out


def one(table: str, row: sqlite3.Row | None, build: Callable[[sqlite3.Row], T]) -> T | None:
    found = parsed(table, [row] if row is not None else [], build)
    return found[0] if found else None


def json_column(text: Any) -> Any:
    if not isinstance(text, str):
        raise TypeError(f"a JSON column holds {type(text).__name__}, not text")
    return json.loads(text)


def flag(value: Any) -> bool:
    """An INTEGER column holding a boolean: 0 or 1, nothing else."""
    if value not in (0, 1) or isinstance(value, float):
        raise ValueError(f"{value!r} is not 0 or 1")
    return bool(value)


def _id(row: sqlite3.Row) -> object:
    try:
        return row["id"]
    except (IndexError, KeyError):
        return "?"


class _Effect(BaseModel):
    """What /metrics and the model read of a change's measured effect."""
    pool: str
    dataset: str | None
    metric: str
    ratio: float | None = Field(None, allow_inf_nan=False)


class StoredChange(BaseModel):
    """The fields of a recorded setting change (advisor/changes/tracker.py) its readers rely on;
    the others are kept as they are."""
    model_config = ConfigDict(extra="allow")

    id: int
    scope: Literal["dataset", "module"]
    status: Literal["measuring", "done"]
    pool: str | None
    dataset: str | None
    parameter: str
    old: str
    new: str
    verdict: str
    detected_at_epoch: float
    notes: list[str]
    effects: list[_Effect]
    before: dict[str, dict[str, list[float]]] | None = Field(None, alias="_before")  # measuring: its window


def change_record(text: Any) -> dict[str, Any]:
    record = json_column(text)
    if not isinstance(record, dict):
        raise TypeError(f"a change record is an object, not {type(record).__name__}")
    change = StoredChange.model_validate(record)
    plausible({"detected_at_epoch": change.detected_at_epoch})
    if change.status == "measuring" and change.before is None:
        raise ValueError("a change still measuring has no before window")
    return record
