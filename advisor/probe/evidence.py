"""The probe evidence of a pool and workload read from the store (advisor/evidence/parameters.py
summarizes it): the latest completed run that measured a parameter is the one used."""
from __future__ import annotations

import logging
import os
import sqlite3
from collections import defaultdict
from typing import Callable

from advisor.evidence.parameters import ParameterEvidence, summarize
from advisor.store.db import StoreError
from advisor.store.probes import ProbeStore, ResultRow, read_existing

log = logging.getLogger(__name__)


def evidence(store: ProbeStore, pool: str, workload: str) -> list[ParameterEvidence]:
    latest: dict[str, int] = {}
    rows_by_run: dict[tuple[str, int], list[ResultRow]] = defaultdict(list)
    for row in store.results_for(pool, workload):
        latest[row.parameter] = max(latest.get(row.parameter, 0), row.run_id)
        rows_by_run[(row.parameter, row.run_id)].append(row)
    return [summarize(p, rows_by_run[(p, run)]) for p, run in sorted(latest.items())]


def stored_evidence(state_dir: str | os.PathLike[str]) -> Callable[[str, str], list[ParameterEvidence]]:
    """What `recommend(measured=...)` takes: the evidence of a pool and workload from the store
    under `state_dir`, or none when no probe ever ran there (the database is not created)."""

    def lookup(pool: str, workload: str) -> list[ParameterEvidence]:
        try:
            return read_existing(state_dir, lambda store: evidence(store, pool, workload) if store else [])
        except (StoreError, sqlite3.Error) as exc:  # advice goes on from the rules alone; the log says why
            log.warning("probe results under %s cannot be read: %s", state_dir, exc)
            return []

    return lookup
