"""The one lab recording that holds the per-pool dmu_tx_assign kstat (tests/fixtures/tx_assign/,
recorded with the write throttle engaged; the hosts' recordings predate it) served by the real app:
its zfs_pool_tx_assign_seconds family against a golden file, in the naming conventions, and the
whole body through promtool."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support import FIXTURES, check_golden
from support.dashboard import GRAFANA, alternatives, panel_targets, resolve
from support.metricnames import families_in, violations
from support.service import Service

from advisor.app import create_app
from advisor.settings import Settings

from .promserver import PrometheusServer

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


def test_the_dashboards_txg_wait_heatmap_reads_the_recording_in_prometheus(tmp_path):
    """The heatmap "Waiting for a txg" (deploy/grafana): its query, run in a real Prometheus that
    scrapes the service on the throttled recording, returns the histogram's buckets for that
    instance (the fleet test's two recordings have no such kstat: their panel is empty by design)."""
    [(panel, target)] = [(p, t) for p, t in panel_targets(GRAFANA / "zfs-advisor.json")
                         if "zfs_pool_tx_assign_seconds_bucket" in t["expr"]]
    assert panel["type"] == "heatmap"
    config = tmp_path / "config.toml"
    (tmp_path / "prometheus").mkdir()
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n')
    with Service(THROTTLED, tmp_path, "--config", str(config)) as service:
        instance = f"127.0.0.1:{service.port}"
        with PrometheusServer(tmp_path / "prometheus", targets=[instance], scrape_interval="1s") as prom:
            prom.wait_for("count_over_time(up[1m]) >= 5")
            result = prom.query(resolve(target["expr"], alternatives(instance), rate_interval="10s",
                                        job="zfs-advisor"))
    buckets = {r["metric"]["le"] for r in result if r["metric"].get("instance") == instance}
    # one series per bucket the exporter writes (the golden file's), +Inf included
    exported = {line.split('le="')[1].split('"')[0] for line in GOLDEN.read_text().splitlines() if "_bucket{" in line}
    assert len(exported) == 21 and {float(le) for le in buckets} == {float(le) for le in exported}, sorted(buckets)
