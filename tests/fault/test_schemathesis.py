"""schemathesis over /openapi.json against the real `zfs-advisor serve` (a replayed lab snapshot,
127.0.0.1): every check but one, at least 1,000 generated requests, no failure, no ERROR logged.

Left out: `positive_data_acceptance` (a request valid by the schema must get 2xx). The
document cannot say that `page_size` belongs to some workloads only, or that a pool may not
be called `mirror0`: such requests are valid by the schema and rightly refused with a 400
that lists what is valid. Runs only with FAULT_SUITE=full and schemathesis installed
(`pip install -e '.[test,fault]'`): about 20 s on two cores.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support import HOSTS

from tests.fault.tally import FULL

SNAPSHOT = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"
EXAMPLES_PER_OPERATION = 200
EXCLUDED_CHECKS = "positive_data_acceptance"
TOKEN = "schemathesis-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not FULL, reason="FAULT_SUITE=full only (about 20 s)")
def test_schemathesis_finds_nothing(tmp_path, tally):
    st = Path(sys.executable).with_name("st")
    if not st.exists() and not shutil.which("st"):
        pytest.fail("schemathesis is not installed: pip install -e '.[test,fault]'")
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    # A token, so that POST /v1/probes is exercised past its 401/403; what it queues stays in tmp_path.
    env = {**os.environ, "ZFS_ADVISOR_API_TOKEN": TOKEN, "ZFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
    serve = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--root", str(SNAPSHOT), "--port", str(port)],
                             stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        run = subprocess.run(
            [str(st) if st.exists() else "st", "run", f"http://127.0.0.1:{port}/openapi.json", "--checks", "all",
             "--exclude-checks", EXCLUDED_CHECKS, "--max-examples", str(EXAMPLES_PER_OPERATION), "--seed", "14",
             "--header", f"Authorization: Bearer {TOKEN}",
             "--no-color"],
            capture_output=True, text=True, timeout=600, cwd=tmp_path)  # its caches stay out of the tree
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        log.close()
    out = run.stdout + run.stderr
    counts = re.search(r"(\d+) generated, (\d+) passed", out)
    generated, passed = (int(counts.group(1)), int(counts.group(2))) if counts else (0, 0)
    errors_logged = [line for line in (tmp_path / "serve.log").read_text().splitlines() if '"level": "error"' in line]
    tally.cases(generated)
    for i in range(generated):
        tally.fault(survived=i < passed)
    assert run.returncode == 0 and counts and generated == passed, out[-3000:]
    assert generated >= 1000, out[-2000:]
    assert not errors_logged, errors_logged[:3]
