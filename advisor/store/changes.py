"""Recorded setting changes and their verdicts, in the shared database (advisor/store/db.py).

The service writes them (its state directory is its own, docs/security.md); a record is the JSON
the API serves, with the columns the filters need beside it.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Any

from advisor.store.rows import change_record, parsed

MAX_LISTED = 1000  # the most recent ones: GET /v1/changes answers in bounded time


class ChangeStore:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def add(self, record: dict[str, Any]) -> int:
        cur = self.conn.execute(
            "INSERT INTO setting_changes (detected_at, scope, pool, dataset, parameter, status, record_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (record["detected_at_epoch"], record["scope"], record["pool"], record["dataset"], record["parameter"],
             record["status"], "{}"))
        record["id"] = int(cur.lastrowid or 0)
        self.update(record)
        return record["id"]

    def update(self, record: dict[str, Any]) -> None:
        self.conn.execute("UPDATE setting_changes SET status = ?, record_json = ? WHERE id = ?",
                          (record["status"], json.dumps(record, sort_keys=True), record["id"]))

    def records(self, pool: str | None = None, dataset: str | None = None, status: str | None = None,
                limit: int = MAX_LISTED) -> list[dict[str, Any]]:
        """Newest first. A module parameter's change belongs to every pool: `pool` keeps it."""
        where, args = [], []
        if pool is not None:
            where.append("(pool = ? OR scope = 'module')")
            args.append(pool)
        if dataset is not None:
            where.append("dataset = ?")
            args.append(dataset)
        if status is not None:
            where.append("status = ?")
            args.append(status)
        sql = "SELECT id, record_json FROM setting_changes" + (" WHERE " + " AND ".join(where) if where else "")
        rows = self.conn.execute(sql + " ORDER BY detected_at DESC, id DESC LIMIT ?", (*args, limit))
        return parsed("setting_changes", rows, lambda r: change_record(r["record_json"]))

    def probe_active_since(self, since: float) -> bool:
        """A probe run was under way at some time from `since` on: it changes module parameters
        (and restores them), which are not the user's changes."""
        row = self.conn.execute(
            "SELECT 1 FROM probe_runs WHERE status = 'running' OR ended_at >= ? OR stopped_at >= ? LIMIT 1",
            (since, since)).fetchone()
        return row is not None
