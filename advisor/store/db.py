"""Open the advisor's SQLite database and bring its schema up to date.

WAL mode (readers never block the probe writing results), foreign keys on, a
`schema_version` row and numbered migrations applied in order inside one
transaction each; a database newer than this code is refused, never downgraded.
https://www.sqlite.org/wal.html, https://www.sqlite.org/pragma.html#pragma_user_version
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

DB_FILE = "advisor.sqlite3"

# Each migration moves the schema from version i to i+1. Append, never edit.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE probe_runs (
        id INTEGER PRIMARY KEY,
        pool TEXT NOT NULL,
        workload TEXT NOT NULL,
        role TEXT,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'aborted', 'failed')),
        reason TEXT,
        started_at REAL NOT NULL,
        ended_at REAL,
        stopped_at REAL,
        budget_json TEXT NOT NULL,
        plan_json TEXT NOT NULL,
        pool_json TEXT,
        host TEXT,
        pid INTEGER
    );
    CREATE INDEX probe_runs_pool_workload ON probe_runs (pool, workload, started_at);
    CREATE TABLE probe_results (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES probe_runs (id) ON DELETE CASCADE,
        parameter TEXT NOT NULL,
        value TEXT NOT NULL,
        scope TEXT NOT NULL,
        baseline INTEGER NOT NULL,
        repeat INTEGER NOT NULL,
        started_at REAL NOT NULL,
        iops REAL NOT NULL,
        read_iops REAL NOT NULL,
        write_iops REAL NOT NULL,
        read_bw REAL NOT NULL,
        write_bw REAL NOT NULL,
        read_p50 REAL, read_p99 REAL, read_p999 REAL,
        write_p50 REAL, write_p99 REAL, write_p999 REAL,
        sync_p99 REAL,
        cpu_user REAL, cpu_system REAL,
        runtime_seconds REAL NOT NULL,
        written_bytes INTEGER NOT NULL,
        compress_percentage INTEGER,
        compress_ratio REAL,
        working_set_bytes INTEGER,
        arc_max_bytes INTEGER,
        arc_hit_ratio REAL,
        pool_json TEXT NOT NULL,
        job TEXT NOT NULL,
        fio_version TEXT
    );
    CREATE INDEX probe_results_run ON probe_results (run_id);
    CREATE TABLE saved_module_params (
        run_id INTEGER NOT NULL,
        name TEXT NOT NULL,
        original TEXT NOT NULL,
        effective TEXT,
        saved_at REAL NOT NULL,
        PRIMARY KEY (run_id, name)
    );
    """,
    """
    CREATE TABLE efficiency_reports (
        id INTEGER PRIMARY KEY,
        pool TEXT NOT NULL,
        measured_at REAL NOT NULL,
        report_json TEXT NOT NULL
    );
    """,
    # 3: requests queued by POST /v1/probes are runs with status 'queued' (one id from the
    # request to its results); the prober records why it skipped a pool. SQLite cannot change
    # a CHECK constraint in place: the table is rebuilt (https://www.sqlite.org/lang_altertable.html,
    # "other kinds of table schema changes"), with foreign keys off during migrations.
    """
    CREATE TABLE probe_runs_v3 (
        id INTEGER PRIMARY KEY,
        pool TEXT NOT NULL,
        workload TEXT NOT NULL,
        role TEXT,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'aborted', 'failed')),
        reason TEXT,
        started_at REAL NOT NULL,
        ended_at REAL,
        stopped_at REAL,
        budget_json TEXT NOT NULL,
        plan_json TEXT NOT NULL,
        pool_json TEXT,
        host TEXT,
        pid INTEGER,
        queued_at REAL,
        request_json TEXT
    );
    INSERT INTO probe_runs_v3 (id, pool, workload, role, status, reason, started_at, ended_at, stopped_at,
                               budget_json, plan_json, pool_json, host, pid)
        SELECT id, pool, workload, role, status, reason, started_at, ended_at, stopped_at,
               budget_json, plan_json, pool_json, host, pid FROM probe_runs;
    DROP TABLE probe_runs;
    ALTER TABLE probe_runs_v3 RENAME TO probe_runs;
    CREATE INDEX probe_runs_pool_workload ON probe_runs (pool, workload, started_at);
    CREATE INDEX probe_runs_status ON probe_runs (status);
    CREATE TABLE profiler_skips (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        pool TEXT NOT NULL,
        workload TEXT,
        run_id INTEGER,
        kind TEXT NOT NULL,
        reason TEXT NOT NULL
    );
    CREATE INDEX profiler_skips_at ON profiler_skips (at);
    """,
    # 4: the bytes a repeat's own layout wrote (each repeat lays its files out afresh; with one
    # layout a candidate, its first repeat carries them), counted in the daily byte budget.
    # NULL for results stored before: their layouts were not counted.
    """
    ALTER TABLE probe_results ADD COLUMN layout_written_bytes INTEGER;
    """,
    # 5: all the bytes a run wrote into its scratch datasets, kept up to date while it runs:
    # also what an aborted layout or repeat wrote, which no result carries. NULL for runs
    # stored before: the daily budget sums their results instead.
    """
    ALTER TABLE probe_runs ADD COLUMN written_bytes INTEGER;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(Exception):
    """The database cannot be used (newer schema, unreadable file); the message says which."""


def connect(state_dir: str | os.PathLike[str]) -> sqlite3.Connection:
    directory = Path(state_dir)
    directory.mkdir(parents=True, exist_ok=True, mode=0o750)
    path = directory / DB_FILE
    _owned_like_directory(directory, path)
    try:
        conn = sqlite3.connect(path, timeout=10.0, isolation_level=None)  # explicit transactions
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from None
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across a crash of this process
    conn.execute("PRAGMA foreign_keys=OFF")  # a migration may rebuild a table others refer to
    try:
        migrate(conn, path)
    finally:
        conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _owned_like_directory(directory: Path, path: Path) -> None:
    """Root (the privileged prober) creating the database in the API's state directory creates
    it as the directory's owner (the service's user), so the unprivileged API can still write
    its queue and the WAL's -shm file. SQLite itself gives -wal/-shm/-journal files the owner
    of the database when it runs as root (robustFchown in os_unix.c), so only the database
    file needs this (docs/security.md, "The probe unit")."""
    if os.geteuid() != 0 or path.exists():
        return
    owner = directory.stat()
    if owner.st_uid == 0:
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o640)
    except FileExistsError:
        return
    try:
        os.fchown(fd, owner.st_uid, owner.st_gid)
    finally:
        os.close(fd)


def migrate(conn: sqlite3.Connection, path: object = "database") -> int:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path} has schema version {version}, newer than this zfs-advisor ({SCHEMA_VERSION})")
    for number in range(version, SCHEMA_VERSION):  # executescript() would commit early: statement by statement
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(MIGRATIONS[number]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
