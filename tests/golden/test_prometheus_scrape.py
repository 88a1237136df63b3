"""A real Prometheus scrapes the real service replaying each recorded lab snapshot.

The service (`python -m advisor serve --root SNAPSHOT`) replays what the lab
recorded; Prometheus (Debian's package) scrapes it; PromQL must return the
pool, vdev, ARC, txg and histogram series, with values equal to what the raw
recorded outputs say (read here with no project code: the commands/*.out
files and kstat text of the snapshot).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from support import REPO, recorded_snapshots
from support.waiting import wait_until

from .promserver import PrometheusServer, free_port

# One snapshot under load per OpenZFS line: the I/O counters are non-zero there.
SNAPSHOTS = sorted({p.parent.parent.name: p for p in recorded_snapshots("load")}.values())


def raw_command(snapshot: Path, flag: str) -> str:
    manifest = json.loads((snapshot / "manifest.json").read_text())
    for command in manifest["commands"]:
        if command["argv"][:2] == ["zpool", "iostat"] and flag in command["argv"]:
            return (snapshot / command["stdout_file"]).read_text()
    raise LookupError(f"no zpool iostat {flag} in {snapshot}")


def raw_histogram_total(text: str, pool: str, column: int) -> int:
    """Sum of one column of the pool's own section of scripted `zpool iostat -w/-r` output."""
    total, inside = 0, False
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 1 and line.strip():
            inside = line.strip() == pool
        elif inside and len(fields) > column + 1:
            total += int(fields[column + 1])
    return total


def raw_kstat(snapshot: Path, path: str, field: str) -> int:
    text = (snapshot / path.lstrip("/")).read_text()
    return int(re.search(rf"^{field}\s+\d+\s+(\d+)$", text, re.MULTILINE).group(1))


@pytest.fixture
def service(request):
    snapshot: Path = request.param
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "ZFS_ADVISOR_LOG_LEVEL": "warning"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "advisor", "serve", "--root", str(snapshot), "--port", str(port)],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        def answering() -> bool:
            assert proc.poll() is None, "the service exited before it answered /healthz"
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
                return True
            except OSError:
                return False

        wait_until(answering, 60, "the service to answer /healthz", interval=0.2)
        yield snapshot, f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def value(result: list[dict]) -> float:
    assert len(result) == 1, result
    return float(result[0]["value"][1])


@pytest.mark.parametrize("service", SNAPSHOTS, ids=lambda p: "/".join(p.parts[-3:]), indirect=True)
def test_prometheus_scrapes_consistent_series(service, tmp_path):
    snapshot, target = service
    with PrometheusServer(tmp_path, targets=[target]) as prom:
        prom.wait_for('up{job="zfs-advisor"} == 1')
        prom.wait_for("zfs_pool_health_state")
        pools = {r["metric"]["pool"] for r in prom.query('zfs_pool_health_state == 1')}
        assert pools
        assert value(prom.query("max(zfs_advisor_scrape_collector_success) - min(zfs_advisor_scrape_collector_success)")) == 0
        assert value(prom.query("min(zfs_advisor_scrape_collector_success)")) == 1
        # ARC: the kstat's own value
        assert value(prom.query("zfs_arc_size_bytes")) == raw_kstat(snapshot, "/proc/spl/kstat/zfs/arcstats", "size")
        latency = raw_command(snapshot, "-vw")
        sizes = raw_command(snapshot, "-vr")
        for pool in pools:
            sel = f'pool="{pool}"'
            # histogram _count = the sum of zpool iostat -w's column (total_wait_read = column 0)
            count = value(prom.query(f'zfs_pool_latency_seconds_count{{{sel},queue="total",op="read"}}'))
            assert count == raw_histogram_total(latency, pool, 0)
            assert value(prom.query(f'zfs_pool_latency_seconds_bucket{{{sel},queue="total",op="read",le="+Inf"}}')) == count
            writes = value(prom.query(f'zfs_pool_request_size_bytes_count{{{sel},io="individual",queue="asyncq",op="write"}}'))
            assert writes == raw_histogram_total(sizes, pool, 6)  # ind async_write: 7th column of -r
            # histogram_quantile works on the buckets (a finite latency when there were reads)
            if count:
                p99 = value(prom.query(
                    f'histogram_quantile(0.99, zfs_pool_latency_seconds_bucket{{{sel},queue="total",op="read"}})'
                ))
                assert 1e-6 < p99 < 200
            # vdev tree and txgs
            assert prom.query(f"zfs_vdev_info{{{sel}}}")
            assert prom.query(f"zfs_pool_txgs_total{{{sel}}}")
        assert prom.query("zfs_advisor_disk_info")  # the diskstats counters are off by default
