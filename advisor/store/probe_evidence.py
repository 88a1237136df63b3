"""The probe evidence of a pool and workload read from the store (advisor/evidence/parameters.py
summarizes it): the latest completed run that measured a parameter is the one used, unless the
host's CPU, not the storage, set its pace (advisor/evidence/bound.py): then it is set aside."""
from __future__ import annotations

import logging
import os
import sqlite3
from collections import defaultdict
from collections.abc import Callable

from advisor.evidence.bound import storage_rows
from advisor.evidence.parameters import ParameterEvidence, set_aside_only, summarize
from advisor.store.db import StoreError
from advisor.store.probes import ProbeStore, ResultRow, read_existing

log = logging.getLogger(__name__)


def evidence(store: ProbeStore, pool: str, workload: str) -> list[ParameterEvidence]:
    """Per parameter, its latest run that is evidence about the storage, with the newer runs set
    aside (the host's CPU bound them, advisor/evidence/bound.py); a parameter whose every run was
    set aside has no candidates, only those runs."""
    kept, aside = storage_rows(store.results_for(pool, workload))
    latest: dict[str, int] = {}
    rows_by_run: dict[tuple[str, int], list[ResultRow]] = defaultdict(list)
    for row in kept:
        latest[row.parameter] = max(latest.get(row.parameter, 0), row.run_id)
        rows_by_run[(row.parameter, row.run_id)].append(row)
    out = []
    for parameter in sorted({*latest, *(a.parameter for a in aside)}):
        newer = sorted((a for a in aside if a.parameter == parameter and a.run_id > latest.get(parameter, 0)),
                       key=lambda a: a.run_id)
        if parameter not in latest:
            out.append(set_aside_only(parameter, newer))
            continue
        found = summarize(parameter, rows_by_run[(parameter, latest[parameter])])
        found.set_aside = newer
        out.append(found)
    return out


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
