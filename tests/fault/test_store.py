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

from advisor.app import create_app
from advisor.settings import Settings
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
