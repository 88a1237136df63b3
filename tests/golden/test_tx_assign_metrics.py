"""The one lab recording that holds the per-pool dmu_tx_assign kstat (tests/fixtures/tx_assign/,
recorded with the write throttle engaged; the hosts' recordings predate it) served by the real app:
its zfs_pool_tx_assign_seconds family against a golden file, in the naming conventions, and the
whole body through promtool."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support import FIXTURES, check_golden
from support.metricnames import families_in, violations

from advisor.app import create_app
from advisor.settings import Settings

THROTTLED = FIXTURES / "tx_assign" / "2.3.2-ssd-mirror2x2-throttled"
GOLDEN = Path(__file__).resolve().parent / "tx_assign" / "2.3.2-ssd-mirror2x2-throttled.prom"


async def test_the_throttled_recordings_tx_assign_family(http_client, update_golden):
    client = await http_client(create_app(Settings(root=str(THROTTLED))))
    resp = await client.get("/metrics")
    assert resp.status == 200
    body = await resp.text()
    family = "".join(line + "\n" for line in body.splitlines()
                     if line.startswith(("zfs_pool_tx_assign_seconds", "# HELP zfs_pool_tx_assign_seconds",
                                         "# TYPE zfs_pool_tx_assign_seconds")))
    assert 'zfs_pool_tx_assign_seconds_count{pool="tank"} 720.0' in family
    check_golden(GOLDEN, family, update_golden, "zfs_pool_tx_assign_seconds of the throttled recording")
    assert violations(families_in(body)) == []
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: install Debian's `prometheus` package (tests/run does)"
    result = subprocess.run([promtool, "check", "metrics"], input=body.encode(), capture_output=True, timeout=60)
    assert result.returncode == 0, (result.stdout + result.stderr).decode()
