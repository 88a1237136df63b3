"""How the store's readers fared, for what the service says about it: /metrics
(zfs_advisor_store_rows_skipped_total), /healthz and the answers (`probe_store`).

A stored row that does not parse is skipped where it is read (advisor/store/rows.py) and counted
here by table; a database that cannot be read at all is noted per state directory until a read of
it works again. Process-wide: the API's handlers read the store from worker threads.
"""
from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from typing import TypeVar

from pydantic import BaseModel

from advisor.process.logs import RateLimitedLog

log = logging.getLogger(__name__)
R = TypeVar("R", bound=BaseModel)
# The tables whose rows are read into answers: each is counted from 0, so rate() has a series.
TABLES = ("probe_runs", "probe_results", "setting_changes", "efficiency_reports", "profiler_skips")

_lock = threading.Lock()
_skipped: Counter[str] = Counter()
_unreadable: dict[str, str] = {}  # state directory -> why its last read failed
_said = RateLimitedLog(log)


def row_skipped(table: str, row_id: object, why: str) -> None:
    with _lock:
        _skipped[table] += 1
    _said.log(logging.WARNING, table, "a stored %s row (id %s) does not parse and is skipped: %s",
              table, row_id, " ".join(why.split())[:300])


def rows_skipped() -> dict[str, int]:
    """Rows skipped since start, by table (every table, 0 when none)."""
    with _lock:
        return {table: _skipped[table] for table in sorted({*TABLES, *_skipped})}


def read_failed(state_dir: str | os.PathLike[str], reason: str) -> None:
    with _lock:
        _unreadable[os.fspath(state_dir)] = reason


def read_worked(state_dir: str | os.PathLike[str]) -> None:
    with _lock:
        _unreadable.pop(os.fspath(state_dir), None)


def with_store_state(answer: R, state_dir: str | os.PathLike[str]) -> R:
    """`answer` (a RecommendResponse) saying why the probe results were not read, when they were not."""
    reason = unreadable(state_dir)
    return answer.model_copy(update={"probe_store": reason}) if reason else answer


def unreadable(state_dir: str | os.PathLike[str]) -> str | None:
    """Why the last read of the database under `state_dir` failed; None when it worked (or none was made)."""
    with _lock:
        return _unreadable.get(os.fspath(state_dir))
