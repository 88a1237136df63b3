"""The latest `probe --efficiency` report of each pool, read from the store under `state_dir`
for the API, /metrics and /recommend (which never create the database by reading)."""
from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable

from advisor.evidence.efficiency import PoolEfficiency, parse_reports
from advisor.store.db import StoreError
from advisor.store.probes import ProbeStore, read_existing

log = logging.getLogger(__name__)


def efficiency_of(store: ProbeStore | None, pool: str | None = None) -> list[PoolEfficiency]:
    """Each pool's latest report (`pool`'s alone when given); a report that is no report is skipped, logged."""
    return parse_reports(store.latest_efficiency(pool)) if store is not None else []


def stored_efficiency(state_dir: str | os.PathLike[str]) -> Callable[[str], PoolEfficiency | None]:
    """What `recommend(efficiency=...)` takes: a pool's latest report, or None (none stored, or no
    database there, which is not created)."""

    def lookup(pool: str) -> PoolEfficiency | None:
        try:
            found = read_existing(state_dir, lambda store: efficiency_of(store, pool))
        except (StoreError, sqlite3.Error) as exc:  # the answer goes on without it; the log says why
            log.warning("efficiency reports under %s cannot be read: %s", state_dir, exc)
            return None
        return found[0] if found else None

    return lookup
