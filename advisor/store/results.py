"""The probe results and verified setting changes under a state directory as the model reads
them (advisor/model/inputs.py ProbeResults): a store that cannot be read is logged and reads as
empty, and reading never creates the database."""
from __future__ import annotations

import logging
import os
import sqlite3
from typing import Any

from advisor.process.logs import RateLimitedLog
from advisor.store.changes import ChangeStore
from advisor.store.db import StoreError
from advisor.store.probes import ProbeStore, ResultRow, read_existing

log = logging.getLogger(__name__)
# said again on every request while it lasts: once a minute, with a count (advisor/process/logs.py)
_repeated = RateLimitedLog(log, interval=60.0)


class StoredResults:
    def __init__(self, state_dir: str | os.PathLike[str]):
        self.state_dir = state_dir

    def generation(self) -> tuple[int, int]:
        def newest(store: ProbeStore | None) -> tuple[int, int]:
            if store is None:
                return 0, 0
            result = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM probe_results").fetchone()[0]
            verified = store.conn.execute("SELECT COUNT(*) FROM setting_changes WHERE status = 'done'").fetchone()[0]
            return int(result), int(verified)
        try:
            return read_existing(self.state_dir, newest)
        except (StoreError, sqlite3.Error) as exc:
            _repeated.log(logging.WARNING, "probe results", "probe results under %s cannot be read: %s", self.state_dir, exc)
            return -1, -1

    def results_for(self, pool: str, workload: str) -> list[ResultRow]:
        try:
            return read_existing(self.state_dir, lambda s: s.results_for(pool, workload) if s else [])
        except (StoreError, sqlite3.Error) as exc:
            _repeated.log(logging.WARNING, "probe results", "probe results under %s cannot be read: %s", self.state_dir, exc)
            return []

    def verified_changes(self, pool: str) -> list[dict[str, Any]]:
        """The measured (done) dataset setting changes of `pool`, newest first, as /v1/changes shows them."""
        def done(store: ProbeStore | None) -> list[dict[str, Any]]:
            if store is None:
                return []
            return [r for r in ChangeStore(store.conn).records(pool=pool, status="done") if r.get("scope") == "dataset"]
        try:
            return read_existing(self.state_dir, done)
        except (StoreError, sqlite3.Error) as exc:
            _repeated.log(logging.WARNING, "setting changes", "setting changes under %s cannot be read: %s", self.state_dir,
                           exc)
            return []
