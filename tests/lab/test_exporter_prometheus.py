"""Lab: a real Prometheus on the host scrapes the exporter running in the VM against a real pool.

The daemon runs in the VM (the working copy shared at /project); an ssh
tunnel exposes its port to the host, where Debian's Prometheus scrapes it.
PromQL must return the pool, vdev, ARC, txg and histogram series, and the
counters must lie between what `zpool iostat` and the kstats say just before
and just after Prometheus read them.  The zpool/zfs output refreshes in the
background (every 5 s here), so the test waits for two command runs after
its "before" reading: the second of them started after it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from labexporter import PORT, PY, exporter_in_vm
from labparams import lab_params

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from promserver import PrometheusServer  # noqa: E402 - after the sys.path line above

pytestmark = [
    pytest.mark.lab,
    pytest.mark.parametrize("lab_vm", lab_params(["ssd-mirror2x2"]), indirect=True, scope="session"),
]
COMMANDS_INTERVAL = 5  # seconds between the daemon's zpool/zfs runs


def command_runs(vm) -> int:
    """zfs_advisor_command_runs_total, read from the daemon inside the VM."""
    out = vm.exec(f"{PY} -c 'import urllib.request as u\n"
                  f"for l in u.urlopen(\"http://127.0.0.1:{PORT}/metrics\").read().decode().splitlines():\n"
                  f"    if l.startswith(\"zfs_advisor_command_runs_total \"): print(int(float(l.split()[1])))'",
                  check=True).stdout
    return int(out)


def histogram_total(vm, pool: str, flag: str, column: int) -> int:
    """Sum of one column of the pool's own section of `zpool iostat <flag> -Hp`."""
    out = vm.exec(["zpool", "iostat", flag, "-Hp", pool], check=True).stdout
    return sum(int(line.split("\t")[column + 1]) for line in out.splitlines() if line.count("\t") > column)


def last_txg(vm, pool: str) -> int:
    out = vm.exec(f"awk '$3 == \"C\" {{t = $1}} END {{print t}}' /proc/spl/kstat/zfs/{pool}/txgs", check=True)
    return int(out.stdout)


@pytest.fixture
def exporter_url(lab_vm):
    with exporter_in_vm(lab_vm, {"ZFS_ADVISOR_COMMANDS_INTERVAL_SECONDS": str(COMMANDS_INTERVAL)}) as url:
        yield url


def test_prometheus_scrapes_the_exporter_in_the_vm(lab_vm, exporter_url, tmp_path):
    vm = lab_vm
    vm.exec("dd if=/dev/urandom of=/tank/pg/lab-io bs=1M count=32 conv=fsync status=none && "
            "dd if=/tank/pg/lab-io of=/dev/null bs=8k status=none", timeout=300, check=True)
    reads_before = histogram_total(vm, "tank", "-w", 0)
    txg_before = last_txg(vm, "tank")
    runs_before = command_runs(vm)
    with PrometheusServer(tmp_path, targets=[exporter_url], scrape_interval="5s") as prom:
        prom.wait_for('up{job="zfs-advisor"} == 1', timeout=120)
        prom.wait_for(f"zfs_advisor_command_runs_total >= {runs_before + 2}", timeout=180)

        def one(expr: str) -> float:
            result = prom.query(expr)
            assert len(result) == 1, (expr, result)
            return float(result[0]["value"][1])

        reads = one('zfs_pool_latency_seconds_count{pool="tank",queue="total",op="read"}')
        txgs = one('zfs_pool_txgs_total{pool="tank"}')
        reads_after = histogram_total(vm, "tank", "-w", 0)
        txg_after = last_txg(vm, "tank")
        assert reads_before <= reads <= reads_after and reads > 0
        assert txg_before <= txgs <= txg_after
        assert one('zfs_pool_health_state{pool="tank",state="ONLINE"}') == 1
        p99 = one('histogram_quantile(0.99, zfs_pool_latency_seconds_bucket{pool="tank",queue="total",op="read"})')
        assert 1e-6 < p99 < 10
        assert {r["metric"]["vdev"] for r in prom.query('zfs_vdev_info{pool="tank"}')} >= {"mirror-0", "mirror-1"}
        assert one("zfs_arc_size_bytes") > 0
        assert one('zfs_dataset_logical_written_bytes_total{name="tank/pg"}') >= 32 << 20
        assert len(prom.query('zfs_advisor_disk_info')) == 4  # diskstats counters: metrics_diskstats, off
        assert one("min(zfs_advisor_scrape_collector_success)") == 1
        assert one("zfs_advisor_facts_stale") == 0
        assert one("zfs_advisor_facts_age_seconds") < COMMANDS_INTERVAL + 10
