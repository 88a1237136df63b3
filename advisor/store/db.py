"""Open the advisor's SQLite database and bring its schema up to date.

WAL mode (readers never block the probe writing results), foreign keys on, a
`user_version` and numbered migrations applied in order inside one write
transaction that reads the version first; a database newer than this code is
refused, never downgraded.
https://www.sqlite.org/wal.html, https://www.sqlite.org/pragma.html#pragma_user_version
"""
from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

DB_FILE = "advisor.sqlite3"
BUSY_TIMEOUT_SECONDS = 10.0

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
    # 6: the scratch dataset's primarycache while the repeat ran: "metadata" when the probe kept
    # its data out of the ARC instead of capping it (advisor/probe/probe_service.py). NULL for results
    # stored before: they ran under "all", with the ARC capped as arc_max_bytes says.
    """
    ALTER TABLE probe_results ADD COLUMN scratch_primarycache TEXT;
    """,
    # 7: changes of a tracked setting the service saw between two collections, and the verdict of
    # comparing the I/O before and after (advisor/changes/, docs/changes.md). The service writes it.
    """
    CREATE TABLE setting_changes (
        id INTEGER PRIMARY KEY,
        detected_at REAL NOT NULL,
        scope TEXT NOT NULL CHECK (scope IN ('dataset', 'module')),
        pool TEXT,
        dataset TEXT,
        parameter TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('measuring', 'done')),
        record_json TEXT NOT NULL
    );
    CREATE INDEX setting_changes_detected ON setting_changes (detected_at);
    """,
    # 8: what set each repeat's pace (advisor/evidence/bound.py): 'storage', 'cpu' or 'unclear', why,
    # and the host's counters over the run it was judged on (CPU, steal, ZFS's threads, the pool's
    # disks' busy time). NULL for results stored before: not judged, and kept as evidence as before.
    """
    ALTER TABLE probe_results ADD COLUMN bound TEXT CHECK (bound IN ('storage', 'cpu', 'unclear'));
    ALTER TABLE probe_results ADD COLUMN bound_reason TEXT;
    ALTER TABLE probe_results ADD COLUMN load_json TEXT;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(Exception):
    """The database cannot be used (newer schema, unreadable file); the message says which."""


def connect(state_dir: str | os.PathLike[str]) -> sqlite3.Connection:
    """The database under `state_dir`, created or migrated as needed; StoreError (one line)
    when it cannot be used: a state directory that is no directory, a database file that is
    unreadable, not SQLite or damaged."""
    directory = Path(state_dir)
    path = directory / DB_FILE
    if directory.exists() and not directory.is_dir():
        raise StoreError(f"state directory {directory} is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o750)
        _owned_like_directory(directory, path)
    except OSError as exc:
        raise StoreError(f"cannot use state directory {directory}: {exc.strerror or exc}") from None
    def prepare(conn: sqlite3.Connection) -> None:
        _set_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across a crash of this process
        conn.execute("PRAGMA foreign_keys=OFF")  # a migration may rebuild a table others refer to
        migrate(conn, path)
        conn.execute("PRAGMA foreign_keys=ON")

    return _open(str(path), prepare, f"cannot use {path}")


def _open(target: str, prepare: Callable[[sqlite3.Connection], None], failure: str) -> sqlite3.Connection:
    """A connection to `target` (a path or a file: URI) made ready by `prepare`; closed again, and
    StoreError (`failure`: SQLite's reason), when that fails."""
    conn = None
    try:
        # A writer holding the lock (a migration, a probe's commit) is waited for, not failed on.
        conn = sqlite3.connect(target, uri=target.startswith("file:"), timeout=BUSY_TIMEOUT_SECONDS,
                               isolation_level=None)  # explicit transactions
        conn.row_factory = sqlite3.Row
        prepare(conn)
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise StoreError(f"{failure}: {exc}") from None
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    return conn


def writable(state_dir: str | os.PathLike[str]) -> bool:
    """Whether this process may write the database under `state_dir` (and the files SQLite keeps
    beside it). access(2) says no on a read-only mount to root as well."""
    directory = Path(state_dir)
    database = directory / DB_FILE
    return os.access(directory, os.W_OK | os.X_OK) and (not database.exists() or os.access(database, os.W_OK))


def connect_to_read(state_dir: str | os.PathLike[str]) -> sqlite3.Connection:
    """The existing database under `state_dir` to read: as `connect` (migrated, WAL) when it can be
    written, read-only when it cannot (docs/deploy.md: a state directory the service cannot write
    is still read). StoreError when it cannot be used either way."""
    path = Path(state_dir) / DB_FILE
    if path.is_file() and not os.access(path, os.R_OK):  # SQLite says only "unable to open database file"
        raise StoreError(f"cannot read {path}: permission denied")
    if writable(state_dir):
        try:
            return connect(state_dir)
        except StoreError as exc:
            if "readonly" not in str(exc):  # the file system refused what access(2) allowed
                raise
    return connect_read_only(state_dir)


def connect_read_only(state_dir: str | os.PathLike[str]) -> sqlite3.Connection:
    """The database under `state_dir`, opened read-only: no journal mode switched, no migration.
    A WAL database needs its -shm file to be read, which a reader cannot create in a read-only
    directory: while a writer has it open (its -wal file is there) it is read through the
    writer's files (mode=ro), else as an immutable file, which nobody is writing then.
    https://www.sqlite.org/uri.html, https://www.sqlite.org/wal.html#readonly"""
    path = Path(state_dir) / DB_FILE
    live = Path(f"{path}-wal").exists()
    uri = f"{path.absolute().as_uri()}?{'mode=ro' if live else 'immutable=1'}"

    def prepare(conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            newer = "newer than this zfs-advisor" if version > SCHEMA_VERSION else \
                "older than this zfs-advisor, and read-only here: it cannot be brought up to date"
            raise StoreError(f"{path} has schema version {version}, {newer} ({SCHEMA_VERSION})")
        conn.execute("PRAGMA foreign_keys=ON")

    return _open(uri, prepare, f"cannot read {path} (read-only)")


def _set_wal(conn: sqlite3.Connection) -> None:
    """WAL mode, set once per database file. Switching needs the database to itself, and
    SQLite does not wait (no busy handler) when another connection holds it: while many
    processes open a new database at once, a busy answer is retried until the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


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
    """Bring the schema to SCHEMA_VERSION in one write transaction. The version is read inside
    it (BEGIN IMMEDIATE takes the write lock first): of many processes opening an older or new
    database at once, one migrates and the others, waiting on the lock (busy timeout), then
    read the new version and have nothing to do. A database at this version (versions only
    grow) needs no lock: a reader opening it does not wait for a writer."""
    if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return SCHEMA_VERSION
    conn.execute("BEGIN IMMEDIATE")  # executescript() would commit early: statement by statement
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"{path} has schema version {version}, newer than this zfs-advisor ({SCHEMA_VERSION})")
        for number in range(version, SCHEMA_VERSION):
            for statement in _statements(MIGRATIONS[number]):
                conn.execute(statement)
        if version != SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def store_stamp(state_dir: str | os.PathLike[str]) -> tuple:
    """What changes when a probe writes results (the database and its write-ahead log): part of
    the key of answers cached per collection (/recommend, the page)."""
    stamp: list[tuple[int, int] | None] = []
    for name in (DB_FILE, DB_FILE + "-wal"):
        try:
            st = (Path(state_dir) / name).stat()
            stamp.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append(None)
    return tuple(stamp)
