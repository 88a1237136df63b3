"""Probe runs, their per-repeat results, and module parameters saved before a probe changed them."""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from advisor.evidence.bound import Verdict
from advisor.store import reader_health
from advisor.store.db import DB_FILE, StoreError, connect_to_read
from advisor.store.rows import flag, json_column, one, parsed, plausible

T = TypeVar("T")
DAY_SECONDS = 86400.0  # the window of the daily budgets (usage_since)

RunStatus = Literal["queued", "running", "completed", "aborted", "failed"]
SKIPS_KEPT_SECONDS = 30 * 86400
# The API writes the id of each run it queues here; zfs-advisor-probe.path starts the prober
# when it changes (the API cannot start a unit: it has no privilege to talk to systemd).
QUEUE_SIGNAL = "probe-queue"
# quick_check's lines about one row's values (sqlite3's pragma.c), not about the file's pages
ROW_PROBLEMS = ("CHECK constraint failed", "NULL value in", "non-")
CHECK_LINES = 100  # of those, before the first line about the pages


class ResultRow(BaseModel):
    run_id: int
    parameter: str
    value: str
    scope: str
    baseline: bool
    repeat: int
    started_at: float
    iops: float
    read_iops: float
    write_iops: float
    read_bw: float
    write_bw: float
    read_p50: float | None = None
    read_p99: float | None = None
    read_p999: float | None = None
    write_p50: float | None = None
    write_p99: float | None = None
    write_p999: float | None = None
    sync_p99: float | None = None
    cpu_user: float | None = None
    cpu_system: float | None = None
    runtime_seconds: float
    written_bytes: int  # by the measured run (ramp included)
    layout_written_bytes: int | None = None  # by laying out the files this repeat ran on (None: not counted)
    compress_percentage: int | None = None
    compress_ratio: float | None = None
    working_set_bytes: int | None = None
    arc_max_bytes: int | None = None
    arc_hit_ratio: float | None = None
    scratch_primarycache: str | None = None  # "metadata": the probe's data kept out of the ARC
    pool: dict[str, Any]
    job: str
    fio_version: str | None = None
    bound: Verdict | None = None  # what set the run's pace (None: stored before runs were judged)
    bound_reason: str | None = None
    load: dict[str, Any] | None = None  # the host over the run (advisor/evidence/bound.py RunLoad)


class RunRow(BaseModel):
    id: int
    pool: str
    workload: str
    role: str | None
    status: RunStatus
    reason: str | None
    started_at: float
    ended_at: float | None
    stopped_at: float | None = None
    budget: dict[str, Any]
    plan: list[dict[str, Any]]
    pool_descriptor: dict[str, Any] | None
    host: str | None
    pid: int | None
    queued_at: float | None = None  # set for runs asked for with POST /v1/probes
    request: dict[str, Any] | None = None  # what that POST asked for
    written_bytes: int | None = None  # all it wrote, aborted steps included (None: before schema 5)


class SkipRow(BaseModel):
    at: float
    pool: str
    workload: str | None
    run_id: int | None
    kind: str
    reason: str


_RESULT_COLUMNS = [f for f in ResultRow.model_fields if f not in ("pool", "load")]


class ProbeStore:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    # --- runs ---------------------------------------------------------------------------
    def start_run(self, pool: str, workload: str, role: str | None, budget: dict, plan: list[dict],
                  pool_descriptor: dict | None) -> int:
        cur = self.conn.execute(
            "INSERT INTO probe_runs (pool, workload, role, status, started_at, budget_json, plan_json, pool_json, host, pid)"
            " VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
            (pool, workload, role, time.time(), json.dumps(budget), json.dumps(plan),
             json.dumps(pool_descriptor) if pool_descriptor is not None else None, socket.gethostname(), os.getpid()))
        return _inserted(cur)

    def queue_run(self, pool: str, workload: str, role: str | None, budget: dict, request: dict) -> int:
        """A run asked for (POST /v1/probes), for the prober to plan and start: status 'queued'."""
        now = time.time()
        cur = self.conn.execute(
            "INSERT INTO probe_runs (pool, workload, role, status, started_at, budget_json, plan_json, queued_at,"
            " request_json) VALUES (?, ?, ?, 'queued', ?, ?, '[]', ?, ?)",
            (pool, workload, role, now, json.dumps(budget), now, json.dumps(request)))
        return _inserted(cur)

    def queued(self) -> list[RunRow]:
        """Queued runs, oldest first."""
        return parsed("probe_runs", self.conn.execute("SELECT * FROM probe_runs WHERE status = 'queued' ORDER BY id"), _run)

    def claim_run(self, run_id: int, budget: dict, plan: list[dict], pool_descriptor: dict | None) -> bool:
        """A queued run starts now (its time counts from here); False when it is no longer queued."""
        cur = self.conn.execute(
            "UPDATE probe_runs SET status = 'running', started_at = ?, budget_json = ?, plan_json = ?, pool_json = ?,"
            " host = ?, pid = ? WHERE id = ? AND status = 'queued'",
            (time.time(), json.dumps(budget), json.dumps(plan),
             json.dumps(pool_descriptor) if pool_descriptor is not None else None, socket.gethostname(), os.getpid(),
             run_id))
        return cur.rowcount == 1

    def refuse_run(self, run_id: int, reason: str) -> None:
        """A queued run that cannot be planned or waited too long: failed, having probed for 0 s."""
        now = time.time()
        self.conn.execute("UPDATE probe_runs SET status = 'failed', reason = ?, started_at = ?, ended_at = ?"
                          " WHERE id = ? AND status = 'queued'", (reason, now, now, run_id))

    def note_skip(self, pool: str, workload: str | None, run_id: int | None, kind: str, reason: str) -> None:
        """Kept for SKIPS_KEPT_SECONDS: a pass every 30 minutes on a busy pool adds one a pass."""
        self.conn.execute("DELETE FROM profiler_skips WHERE at < ?", (time.time() - SKIPS_KEPT_SECONDS,))
        self.conn.execute("INSERT INTO profiler_skips (at, pool, workload, run_id, kind, reason) VALUES (?, ?, ?, ?, ?, ?)",
                          (time.time(), pool, workload, run_id, kind, reason))

    def skips(self, since: float = 0.0, limit: int = 100) -> list[SkipRow]:
        rows = self.conn.execute("SELECT * FROM profiler_skips WHERE at >= ? ORDER BY id DESC LIMIT ?", (since, limit))
        return parsed("profiler_skips", rows, lambda r: SkipRow(
            at=r["at"], pool=r["pool"], workload=r["workload"], run_id=r["run_id"], kind=r["kind"], reason=r["reason"]))

    def outcome_counts(self) -> list[tuple[str, str, str, int]]:
        """(pool, workload, status, runs) of every finished run, for zfs_advisor_probe_runs_total."""
        return [(r[0], r[1], r[2], int(r[3])) for r in self.conn.execute(
            "SELECT pool, workload, status, COUNT(*) FROM probe_runs WHERE status IN ('completed', 'aborted', 'failed')"
            " GROUP BY pool, workload, status ORDER BY pool, workload, status")]

    def last_finished(self) -> list[tuple[str, str, float]]:
        """(pool, workload, when the latest finished run ended)."""
        rows = self.conn.execute(
            "SELECT pool, workload, MAX(ended_at) AS ended_at FROM probe_runs WHERE status IN ('completed', 'aborted',"
            " 'failed') AND typeof(ended_at) IN ('integer', 'real') GROUP BY pool, workload ORDER BY pool, workload")
        return parsed("probe_runs", rows, lambda r: (r[0], r[1], float(plausible({"ended_at": r[2]})["ended_at"])))

    def pool_workloads(self) -> list[tuple[str, str]]:
        """(pool, workload) pairs with a completed run."""
        return [(r[0], r[1]) for r in self.conn.execute(
            "SELECT DISTINCT pool, workload FROM probe_runs WHERE status = 'completed' ORDER BY pool, workload")]

    def queue_length(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM probe_runs WHERE status = 'queued'").fetchone()[0])

    def end_run(self, run_id: int, status: RunStatus, reason: str | None = None, stopped_at: float | None = None) -> None:
        """`stopped_at`: when the probe's I/O stopped (an abort), before clean-up took its time."""
        self.conn.execute("UPDATE probe_runs SET status = ?, reason = ?, ended_at = ?, stopped_at = ? WHERE id = ?",
                          (status, reason, time.time(), stopped_at, run_id))

    def run(self, run_id: int) -> RunRow | None:
        return one("probe_runs", self.conn.execute("SELECT * FROM probe_runs WHERE id = ?", (run_id,)).fetchone(), _run)

    def runs(self, pool: str | None = None, workload: str | None = None, limit: int = 100) -> list[RunRow]:
        sql, args = "SELECT * FROM probe_runs WHERE 1=1", list[str]()
        if pool:
            sql, args = sql + " AND pool = ?", [*args, pool]
        if workload:
            sql, args = sql + " AND workload = ?", [*args, workload]
        rows = self.conn.execute(sql + " ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return parsed("probe_runs", rows, _run)

    def running(self) -> list[RunRow]:
        return parsed("probe_runs", self.conn.execute("SELECT * FROM probe_runs WHERE status = 'running'"), _run)

    def usage_since(self, pool: str, since: float) -> tuple[float, int]:
        """(seconds of probing, bytes written by probes) on `pool` since `since` (the daily budget)."""
        row = self.conn.execute(
            "SELECT COALESCE(SUM(COALESCE(ended_at, ?) - started_at), 0) FROM probe_runs"
            " WHERE pool = ? AND started_at >= ? AND status != 'queued'",
            (time.time(), pool, since)).fetchone()
        # A run's own total where it has one (schema 5 on); before that, what its results carry.
        written = self.conn.execute(
            "SELECT COALESCE(SUM(COALESCE(p.written_bytes, (SELECT SUM(r.written_bytes + COALESCE(r.layout_written_bytes, 0))"
            " FROM probe_results r WHERE r.run_id = p.id), 0)), 0) FROM probe_runs p"
            " WHERE p.pool = ? AND p.started_at >= ?", (pool, since)).fetchone()
        return float(row[0]), int(written[0])

    def set_run_written(self, run_id: int, nbytes: int) -> None:
        self.conn.execute("UPDATE probe_runs SET written_bytes = ? WHERE id = ?", (nbytes, run_id))

    # --- results ------------------------------------------------------------------------
    def add_result(self, result: ResultRow) -> None:
        values = result.model_dump()
        cols = [*_RESULT_COLUMNS, "pool_json", "load_json"]
        values["pool_json"] = json.dumps(values.pop("pool"))
        load = values.pop("load")
        values["load_json"] = json.dumps(load) if load is not None else None
        self.conn.execute(f"INSERT INTO probe_results ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                          [values[c] for c in cols])

    def results(self, run_id: int) -> list[ResultRow]:
        rows = self.conn.execute("SELECT * FROM probe_results WHERE run_id = ? ORDER BY id", (run_id,))
        return parsed("probe_results", rows, _result)

    def results_for(self, pool: str, workload: str) -> list[ResultRow]:
        """Results of completed runs of `workload` on `pool`, oldest first."""
        rows = self.conn.execute(
            "SELECT r.* FROM probe_results r JOIN probe_runs p ON p.id = r.run_id"
            " WHERE p.pool = ? AND p.workload = ? AND p.status = 'completed' ORDER BY r.id", (pool, workload))
        return parsed("probe_results", rows, _result)

    # --- module parameters saved before a change ----------------------------------------
    def save_module_param(self, run_id: int, name: str, original: str, effective: str | None = None) -> None:
        """Written (and committed) BEFORE the parameter is changed; the first value saved wins.
        `effective`: the value the kernel actually used when `original` means "default" (0)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO saved_module_params (run_id, name, original, effective, saved_at) VALUES (?, ?, ?, ?, ?)",
            (run_id, name, original, effective, time.time()))

    def forget_module_param(self, run_id: int, name: str) -> None:
        self.conn.execute("DELETE FROM saved_module_params WHERE run_id = ? AND name = ?", (run_id, name))

    def saved_module_params(self) -> list[tuple[int, str, str, str | None]]:
        """(run id, name, original, effective) of parameters not yet restored, oldest save first."""
        return [(r[0], r[1], r[2], r[3]) for r in self.conn.execute(
            "SELECT run_id, name, original, effective FROM saved_module_params ORDER BY saved_at, run_id, rowid")]


    def check(self) -> None:
        """StoreError when SQLite finds the file damaged (https://www.sqlite.org/pragma.html#pragma_quick_check).
        A row breaking a constraint is no damaged file: its readers skip it and count it (advisor/store/rows.py)."""
        found = [r[0] for r in self.conn.execute(f"PRAGMA quick_check({CHECK_LINES})")]
        damage = [line for line in found if line != "ok" and not line.startswith(ROW_PROBLEMS)]
        if damage:
            raise StoreError(f"the database is damaged: {damage[0]}")

    # --- pool efficiency reports --------------------------------------------------------
    def add_efficiency(self, pool: str, report: dict[str, Any], measured_at: float | None = None) -> int:
        """`measured_at`: when it was measured (default now)."""
        cur = self.conn.execute("INSERT INTO efficiency_reports (pool, measured_at, report_json) VALUES (?, ?, ?)",
                                (pool, time.time() if measured_at is None else measured_at, json.dumps(report)))
        return _inserted(cur)

    def efficiency(self, pool: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT id, report_json FROM efficiency_reports WHERE pool = ? ORDER BY id DESC LIMIT 1",
                                (pool,)).fetchone()
        return one("efficiency_reports", row, _report)

    def latest_efficiency(self, pool: str | None = None, per_pool: int = 8) -> list[tuple[str, float, str]]:
        """(pool, measured_at, report JSON as stored) of each pool's `per_pool` latest reports (of
        `pool`'s alone when given), by pool name, newest first: a run may have measured one part
        only, the reader (advisor/evidence/efficiency.py) takes each test from the newest that has it."""
        where, args = (" WHERE pool = ?", (pool,)) if pool is not None else ("", ())
        sql = ("SELECT pool, measured_at, report_json FROM (SELECT pool, measured_at, report_json, id, ROW_NUMBER() "
               f"OVER (PARTITION BY pool ORDER BY id DESC) AS nth FROM efficiency_reports{where}) WHERE nth <= ? "
               "ORDER BY pool, id DESC")
        return parsed("efficiency_reports", self.conn.execute(sql, (*args, per_pool)),
                      lambda r: (r[0], float(plausible({"measured_at": float(r[1])})["measured_at"]), r[2]))


def _inserted(cur: sqlite3.Cursor) -> int:
    """The id of the row an INSERT added (sqlite3 sets lastrowid after every INSERT)."""
    if cur.lastrowid is None:
        raise sqlite3.InterfaceError("the INSERT added no row")
    return cur.lastrowid


def _run(row: sqlite3.Row) -> RunRow:
    run = RunRow(id=row["id"], pool=row["pool"], workload=row["workload"], role=row["role"], status=row["status"],
                 reason=row["reason"], started_at=row["started_at"], ended_at=row["ended_at"], stopped_at=row["stopped_at"],
                 budget=json_column(row["budget_json"]), plan=json_column(row["plan_json"]),
                 pool_descriptor=json_column(row["pool_json"]) if row["pool_json"] else None,
                 host=row["host"], pid=row["pid"], queued_at=row["queued_at"],
                 request=json_column(row["request_json"]) if row["request_json"] else None,
                 written_bytes=row["written_bytes"])
    plausible(run.model_dump(exclude={"budget", "plan", "pool_descriptor", "request"}))
    return run


def _result(row: sqlite3.Row) -> ResultRow:
    data = {c: row[c] for c in _RESULT_COLUMNS}
    data["baseline"] = flag(data["baseline"])
    load = json_column(row["load_json"]) if row["load_json"] is not None else None
    result = ResultRow(pool=json_column(row["pool_json"]), load=load, **data)
    plausible(result.model_dump(exclude={"pool"}))
    return result


def _report(row: sqlite3.Row) -> dict[str, Any]:
    report = json_column(row["report_json"])
    if not isinstance(report, dict):
        raise TypeError(f"an efficiency report is an object, not {type(report).__name__}")
    return report


def read_existing(state_dir: str | os.PathLike[str], read: Callable[[ProbeStore | None], T]) -> T:
    """`read(store)` on the database under `state_dir`, or `read(None)` when no probe ever ran
    there: reading never creates the database. Read-only when the state directory cannot be written;
    a database that cannot be read is noted for /healthz and the answers (advisor/store/reader_health.py)."""
    if Path(state_dir).exists() and not Path(state_dir).is_dir():
        reason = f"the state directory {state_dir} is not a directory"
        reader_health.read_failed(state_dir, reason)
        raise StoreError(reason)
    if not (Path(state_dir) / DB_FILE).exists():
        reader_health.read_worked(state_dir)
        return read(None)
    try:
        conn = connect_to_read(state_dir)
        try:
            found = read(ProbeStore(conn))
        finally:
            conn.close()
    except StoreError as exc:  # its message names the file
        reader_health.read_failed(state_dir, str(exc))
        raise
    except sqlite3.Error as exc:  # opened, then a page could not be read
        reader_health.read_failed(state_dir, f"cannot read {Path(state_dir) / DB_FILE}: {exc}")
        raise
    reader_health.read_worked(state_dir)
    return found


def signal_queue(state_dir: Path, run_id: int) -> None:
    """Tell zfs-advisor-probe.path that a run was queued (it watches this file)."""
    (state_dir / QUEUE_SIGNAL).write_text(f"{run_id}\n", encoding="ascii")
