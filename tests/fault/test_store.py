"""The probe store (real SQLite under a state directory) when its process dies or its disk fills.

A writer process (advisor.store, as `zfs-advisor probe` writes) commits probe result rows one
by one and prints each committed id. It is SIGKILLed at a random moment mid-write, or runs
with a file-size limit (RLIMIT_FSIZE: the state directory is full) until SQLite refuses.
Then the database is reopened: it must open, pass `PRAGMA integrity_check`, hold every row
the writer saw committed (data lost = rows missing), and the API must keep answering
/v1/probes from it.
"""
from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import sys
import time

import pytest
from aiohttp.test_utils import TestClient, TestServer

from advisor.config.settings import Settings
from advisor.service.app import create_app
from advisor.store.db import connect
from support import HOSTS, REPO
from tests.fault.tally import FULL

SNAPSHOT = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"
KILLS = 12 if FULL else 3

WRITER = r"""
import sys
from advisor.store.db import connect
from advisor.store.probes import ProbeStore, ResultRow
store = ProbeStore(connect(sys.argv[1]))
run = store.start_run("tank", "postgres", None, {"seconds": 60}, [{"parameter": "recordsize"}], {"media": "ssd"})
print("run", run, flush=True)
for i in range(100000):
    store.add_result(ResultRow(run_id=run, parameter="recordsize", value=f"{8 << (i % 5)}K", scope="dataset",
                               baseline=i % 5 == 0, repeat=i, started_at=float(i), iops=1000.0 + i, read_iops=500.0,
                               write_iops=500.0, read_bw=1e6, write_bw=1e6, runtime_seconds=10.0,
                               written_bytes=4096 * i, pool={"media": "ssd", "pad": "x" * 200}, job="[job]\n" * 20))
    print("row", store.conn.execute("SELECT max(id) FROM probe_results").fetchone()[0], flush=True)
"""


def _writer(state, limit_bytes: int | None = None) -> subprocess.Popen:
    def limits() -> None:
        if limit_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.Popen([sys.executable, "-c", WRITER, str(state)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limits)


def _committed(stdout: str) -> set[int]:
    """Ids the writer reported committed; a last line the kill cut short ("row" alone) is no report."""
    reports = (line.split() for line in stdout.splitlines())
    return {int(r[1]) for r in reports if len(r) == 2 and r[0] == "row" and r[1].isdigit()}


async def _check(state, committed: set[int]) -> tuple[int, bool]:
    """(rows lost, whether the database opens clean and the API answers from it)."""
    conn = connect(state)
    try:
        healthy = conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        present = {r[0] for r in conn.execute("SELECT id FROM probe_results")}
    finally:
        conn.close()
    async with TestClient(TestServer(create_app(Settings(root=str(SNAPSHOT), state_dir=state)))) as client:
        resp = await client.get("/v1/probes")
        runs = (await resp.json()).get("runs", []) if resp.status == 200 else []
    return len(committed - present), healthy and resp.status == 200 and len(runs) == 1


@pytest.mark.parametrize("kill", range(KILLS))
async def test_sigkill_during_a_store_write_then_reopen(kill, tmp_path, tally):
    state = tmp_path / "state"
    proc = _writer(state)
    rows_before_kill = random.Random(kill).randint(1, 300)
    seen = []
    while len([line for line in seen if line.startswith("row ")]) < rows_before_kill:  # into the stream of writes
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
    time.sleep(random.Random(kill).random() / 100)  # mid-write, at no particular statement
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=30)
    committed = _committed("".join(seen) + out)
    lost, healthy = await _check(state, committed)
    tally.cases()
    tally.fault(healthy and proc.returncode == -signal.SIGKILL and bool(committed), lost)
    assert committed, "the writer committed nothing before the kill: the case tested nothing"
    assert lost == 0 and healthy


async def test_state_directory_full(tmp_path, tally):
    state = tmp_path / "state"
    proc = _writer(state, limit_bytes=512 * 1024)
    out, err = proc.communicate(timeout=120)
    committed = _committed(out)
    refused = proc.returncode != 0 and ("full" in err or "disk I/O error" in err or "File too large" in err)
    lost, healthy = await _check(state, committed)
    tally.cases()
    tally.fault(refused and healthy and bool(committed), lost)
    assert committed and refused, err[-1000:]
    assert lost == 0 and healthy


# --- many processes opening one database at once -------------------------------------------

OPENERS = 140


def _open_when_all_ready(state: str, barrier, answers) -> None:
    """One opener process: waits for all the others, then opens (and migrates) the database."""
    import sqlite3

    from advisor.store.db import StoreError, connect

    barrier.wait()
    try:
        connect(state).close()
        answers.put("ok")
    except (StoreError, sqlite3.Error) as exc:
        answers.put(f"{type(exc).__name__}: {exc}")


def _open_at_once(state) -> list[str]:
    """`OPENERS` real processes (fork) open the database under `state` at the same moment."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier, answers = ctx.Barrier(OPENERS), ctx.Queue()
    procs = [ctx.Process(target=_open_when_all_ready, args=(str(state), barrier, answers)) for _ in range(OPENERS)]
    for p in procs:
        p.start()
    results = [answers.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return [r for r in results if r != "ok"]


def _older_database(state, version: int) -> int:
    """A database at schema `version` holding one run (as an older zfs-advisor left it); its id."""
    import sqlite3

    from advisor.store.db import DB_FILE, MIGRATIONS, _statements

    state.mkdir()
    conn = sqlite3.connect(state / DB_FILE, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    for number in range(version):
        for statement in _statements(MIGRATIONS[number]):
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    run = conn.execute("INSERT INTO probe_runs (pool, workload, status, started_at, budget_json, plan_json)"
                       " VALUES ('tank', 'postgres', 'completed', 1.0, '{}', '[]')").lastrowid
    conn.close()
    return run


@pytest.mark.parametrize("start", ["new", "older"])
def test_simultaneous_first_opens_all_succeed(start, tmp_path, tally):
    """Every opener of a new (or older-schema) database gets it, migrated once, rows kept:
    the schema version is read inside the write transaction that migrates it."""
    from advisor.store.db import SCHEMA_VERSION

    state = tmp_path / "state"
    run = _older_database(state, 2) if start == "older" else None
    failures = _open_at_once(state)
    conn = connect(state)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        runs = [r[0] for r in conn.execute("SELECT id FROM probe_runs")]
        healthy = conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    lost = 0 if run is None else int(run not in runs)
    tally.cases(OPENERS)
    for i in range(OPENERS):
        tally.fault(i >= len(failures) and healthy and version == SCHEMA_VERSION, lost if i == 0 else 0)
    assert not failures, f"{len(failures)} of {OPENERS} opens failed, e.g. {sorted(set(failures))[:3]}"
    assert version == SCHEMA_VERSION and healthy and lost == 0


# --- the CLI on a database it cannot use ------------------------------------------------------

def _damaged_state(tmp_path, damage: str):
    """A state directory whose database is damaged the way `damage` says (a real file each time)."""
    from advisor.store.db import DB_FILE
    from advisor.store.probes import ProbeStore

    state = tmp_path / "state"
    store = ProbeStore(connect(state))
    for _ in range(200):  # enough pages that a cut can fall past the schema
        run = store.start_run("tank", "postgres", None, {"seconds": 60}, [{"parameter": "recordsize", "pad": "x" * 500}],
                              None)
        store.note_skip("tank", "postgres", run, "busy", "the pool was busy " * 20)
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.conn.close()
    db = state / DB_FILE
    data = db.read_bytes()
    if damage == "garbage":
        db.write_bytes(bytes(range(256)) * 40)
    elif damage == "header cut":
        db.write_bytes(data[:50])
    elif damage == "pages cut":
        db.write_bytes(data[: len(data) // 3])
    elif damage == "pages overwritten":
        db.write_bytes(data[:4096] + b"\xa5" * (len(data) - 4096))
    elif damage == "unreadable (a directory)":
        db.unlink()
        db.mkdir()
    elif damage == "state dir is a file":
        for f in state.iterdir():
            f.unlink()
        state.rmdir()
        state.write_text("not a directory\n")
    return state


STORE_DAMAGE = ["garbage", "header cut", "pages cut", "pages overwritten", "unreadable (a directory)",
                "state dir is a file"]


# Each is a CLI start of about 3 s: the unit tier runs the two that read the most of the database.
STORE_COMMANDS = [["probe", "--list"], ["profile", "--skips"]] + (
    [["probe", "--list", "--json"], ["probe", "--show", "1"]] if FULL else [])


@pytest.mark.parametrize("command", STORE_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("damage", STORE_DAMAGE)
def test_cli_on_a_damaged_database_says_one_line(command, damage, tmp_path, tally):
    state = _damaged_state(tmp_path, damage)
    proc = subprocess.run([sys.executable, "-m", "advisor", *command, "--state-dir", str(state)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    one_line = proc.returncode not in (0, 2) and len(lines) == 1 and lines[0].startswith("zfs-advisor")
    tally.cases()
    tally.fault(one_line and "Traceback" not in proc.stderr)
    assert one_line, (proc.returncode, proc.stderr[-1500:])
    assert str(state) in lines[0] or "database" in lines[0], lines[0]


# --- a damaged store degrades visibly: every route answers, self-metrics and /healthz say why ---

def _seeded_state(tmp_path):
    """A state directory as a probe and the change tracker leave it: one completed recordsize run of
    postgres on tank, an efficiency report, a verified setting change (the real store code)."""
    from advisor.store.changes import ChangeStore
    from support.probes import seed_efficiency_report, seed_recordsize_probe

    state = tmp_path / "state"
    seed_recordsize_probe(state)
    seed_efficiency_report(state)
    conn = connect(state)
    ChangeStore(conn).add({"id": None, "detected_at_epoch": 1.7e9, "scope": "dataset", "pool": "tank",
                           "dataset": "tank/pg", "parameter": "recordsize", "old": "131072", "new": "16384",
                           "status": "done", "verdict": "better", "workload": "postgres", "notes": [], "effects": []})
    conn.close()
    return state


# (table, SQL that damages one row of it): what another program, a bug or the disk could leave
BAD_ROWS = {
    "iops not a number": ("probe_results", "UPDATE probe_results SET iops = 'abc' WHERE id = 1"),
    "iops 1e308": ("probe_results", "UPDATE probe_results SET iops = 1e308 WHERE id = 1"),
    "negative iops": ("probe_results", "UPDATE probe_results SET iops = -5 WHERE id = 1"),
    "latency infinite": ("probe_results", "UPDATE probe_results SET write_p99 = 9e999 WHERE id = 1"),
    "baseline not a flag": ("probe_results", "UPDATE probe_results SET baseline = 7 WHERE id = 1"),
    "pool_json not JSON": ("probe_results", "UPDATE probe_results SET pool_json = '{bad' WHERE id = 1"),
    "pool_json a list": ("probe_results", "UPDATE probe_results SET pool_json = '[1]' WHERE id = 1"),
    "run status unknown": ("probe_runs", "UPDATE probe_runs SET status = 'bogus'"),
    "run budget not JSON": ("probe_runs", "UPDATE probe_runs SET budget_json = 'nope'"),
    "run ended in 1e308": ("probe_runs", "UPDATE probe_runs SET ended_at = 1e308"),
    "run ended 'abc'": ("probe_runs", "UPDATE probe_runs SET ended_at = 'abc'"),
    "change not JSON": ("setting_changes", "UPDATE setting_changes SET record_json = '{'"),
    "change scope unknown": ("setting_changes",
                             "UPDATE setting_changes SET record_json = json_set(record_json, '$.scope', 'pool')"),
    "efficiency report not JSON": ("efficiency_reports", "UPDATE efficiency_reports SET report_json = 'x'"),
    "efficiency measured 'abc'": ("efficiency_reports", "UPDATE efficiency_reports SET measured_at = 'abc'"),
}


def _damage_row(state, sql: str) -> None:
    import sqlite3

    from advisor.store.db import DB_FILE

    conn = sqlite3.connect(state / DB_FILE)
    conn.execute("PRAGMA ignore_check_constraints = ON")  # as a program that does not know them
    conn.execute(sql)
    conn.commit()
    conn.close()


def _errors(found: dict) -> dict:
    """Routes that answered a 5xx."""
    return {p: s for p, s in found["statuses"].items() if s >= 500}


@pytest.mark.parametrize("kind", sorted(BAD_ROWS))
async def test_a_row_that_does_not_parse_is_skipped_and_counted(kind, tmp_path, tally):
    from advisor.store.reader_health import rows_skipped
    from tests.fault.store_sweep import sweep

    table, sql = BAD_ROWS[kind]
    state = _seeded_state(tmp_path)
    _damage_row(state, sql)
    before = rows_skipped()[table]
    found = await sweep(str(SNAPSHOT), str(state))
    counted = found["metrics"].get(f'zfs_advisor_store_rows_skipped_total{{table="{table}"}}', 0) > before
    said = found["healthz"]["checks"]["store"]["rows_skipped"][table] > before
    tally.cases()
    tally.fault(not _errors(found) and counted and said)
    assert not _errors(found), found["bodies"]
    assert counted and said, (found["metrics"], found["healthz"])
    assert found["healthz"]["checks"]["store"]["ok"], "one bad row is not an unreadable store"
    assert all(s < 500 for s in found["statuses"].values()), found["statuses"]


UNREADABLE = [d for d in STORE_DAMAGE if d != "state dir is a file"] + ["newer schema version"]


@pytest.mark.parametrize("damage", UNREADABLE)
async def test_an_unreadable_store_is_said_not_read_as_no_probes(damage, tmp_path, tally):
    from tests.fault.store_sweep import sweep

    if damage == "newer schema version":
        state = _seeded_state(tmp_path)
        _damage_row(state, "PRAGMA user_version = 99")
    else:
        state = _damaged_state(tmp_path, damage)
    found = await sweep(str(SNAPSHOT), str(state))
    store = found["healthz"]["checks"]["store"]
    failed = found["metrics"].get('zfs_advisor_scrape_collector_success{collector="probes"}') == 0.0
    said = found["healthz"]["status"] == "degraded" and not store["ok"] and str(state) in store["reason"]
    answered = "probe_store" in found["answer"]
    tally.cases()
    tally.fault(not _errors(found) and failed and said and answered)
    assert not _errors(found), found["bodies"]
    assert failed, found["metrics"]
    assert said, found["healthz"]
    assert answered, sorted(found["answer"])


def _in_a_process(state, prefix: list[str]) -> dict:
    """The sweep in a process of its own, started under `prefix` (a mount namespace, fewer capabilities)."""
    import json

    proc = subprocess.run([*prefix, sys.executable, "-m", "tests.fault.store_sweep", str(SNAPSHOT), str(state)],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _read_only_mount(state) -> list[str]:
    """A prefix that runs a command with `state` bind-mounted read-only in a mount namespace of its
    own (as ProtectSystem=strict leaves a state directory without ReadWritePaths=)."""
    import shutil

    script = f'mount --bind "{state}" "{state}" && mount -o remount,bind,ro "{state}" && exec "$@"'
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"]
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespace here (unshare --mount needs CAP_SYS_ADMIN)")
    return prefix


def test_a_read_only_state_directory_is_read(tmp_path, tally):
    """The documented read-only state directory: its runs are served, the store reads as healthy."""
    state = _seeded_state(tmp_path)
    found = _in_a_process(state, _read_only_mount(state))
    assert not list(state.glob("*-shm")), "the reader wrote into the read-only directory"
    served = found["statuses"]["/v1/probes"] == 200 and found["statuses"]["/v1/probes/1"] == 200
    healthy = found["healthz"]["checks"]["store"]["ok"] and "probe_store" not in found["answer"]
    tally.cases()
    tally.fault(not _errors(found) and served and healthy)
    assert all(s < 500 for s in found["statuses"].values()), (found["statuses"], found["bodies"])
    assert served and healthy, (found["statuses"], found["healthz"])


def test_a_store_the_service_may_not_read(tmp_path, tally):
    """Permission denied, as the service meets a database that is not its own. Root reads any file:
    the sweep runs without the capabilities that let it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, as
    a unit's CapabilityBoundingSet= leaves it), on a database of mode 000."""
    import shutil

    from advisor.store.db import DB_FILE

    state = _seeded_state(tmp_path)
    os.chmod(state / DB_FILE, 0)
    drop = "-dac_override,-dac_read_search"
    if shutil.which("setpriv") is None:
        pytest.skip("no setpriv here")
    found = _in_a_process(state, ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"])
    store = found["healthz"]["checks"]["store"]
    failed = found["metrics"].get('zfs_advisor_scrape_collector_success{collector="probes"}') == 0.0
    tally.cases()
    tally.fault(not _errors(found) and failed and not store["ok"] and "probe_store" in found["answer"])
    assert not _errors(found), found["bodies"]
    assert failed and not store["ok"] and "probe_store" in found["answer"], (found["metrics"], store)


async def test_an_unreadable_store_is_named_in_each_store_answer(tmp_path, tally):
    """The routes whose answer is the store: an empty list naming why, or a 404 naming why (not a 503)."""
    from aiohttp.test_utils import TestClient, TestServer

    from advisor.config.settings import Settings
    from advisor.service.app import create_app
    from advisor.store.db import DB_FILE

    state = tmp_path / "state"
    state.mkdir()
    (state / DB_FILE).write_bytes(b"this is not a database" * 100)
    client = TestClient(TestServer(create_app(Settings(root=str(SNAPSHOT), state_dir=str(state), model=False))))
    await client.start_server()
    try:
        listed = await (await client.get("/v1/probes")).json()
        one = await client.get("/v1/probes/1")
        efficiency = await (await client.get("/v1/efficiency")).json()
        page = await client.get("/probes/1")
        said = [listed["runs"] == [] and "cannot be read" in listed["store_error"],
                one.status == 404 and "cannot be read" in (await one.json())["error"]["reason"],
                efficiency["reports"] == [] and "cannot be read" in efficiency["store_error"],
                page.status == 404 and "cannot be read" in await page.text()]
    finally:
        await client.close()
    tally.cases(len(said))
    for ok in said:
        tally.fault(ok)
    assert all(said), said
