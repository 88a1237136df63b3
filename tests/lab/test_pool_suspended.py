"""Lab: the only disk of a pool vanishes. The shipped alerts (deploy/prometheus/alerts.yml) must
page in a real Prometheus within their `for:`, and the exported health must be the kernel's (the
pool's state kstat), not the last `zpool` output.

The disk is a scsi_debug device inside the VM (RAM-backed, none of the layouts' disks), pulled with
`echo 1 > /sys/block/<disk>/device/delete`, and a write sent. What OpenZFS 2.3 did here (2026-11-27):
the pool stayed ONLINE by its state kstat and `zpool status` (which kept answering), every write
failed and was re-issued (45,300 write errors on the vdev within two minutes, 43 data errors), and
the writer hung in txg_wait_synced: ZfsPoolDataErrors (critical) paged. Had the kernel suspended the
pool, the state kstat would say SUSPENDED and ZfsPoolSuspended page. Such a pool cannot be exported
and may hang later zpool commands, so this test runs last on its OpenZFS line and the VM is stopped
after it.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest
from labexporter import exporter_in_vm
from labparams import lab_params

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from promserver import PrometheusServer  # noqa: E402 - after the sys.path line above

log = logging.getLogger(__name__)
ALERTS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"

pytestmark = [
    pytest.mark.lab,
    pytest.mark.lab_wrecks_vm,
    pytest.mark.parametrize("lab_vm", lab_params(["ssd-mirror2x2"]), indirect=True, scope="session"),
]
COMMANDS_INTERVAL = 5
COMMAND_TIMEOUT = 10
# The critical pool alerts have `for:` of 1 minute at most (ZfsPoolDataErrors none); scrapes and rule
# evaluation every 5 s, zpool every 5 s: 2 minutes is the longest `for:` and its delays.
ALERT_WITHIN = 120


def _lone_disk(vm) -> str:
    """Load scsi_debug (one 256 MiB RAM disk) and return its block device name."""
    vm.exec("modprobe scsi_debug dev_size_mb=256 num_tgts=1 max_luns=1", check=True)
    out = vm.exec("for _ in $(seq 50); do "
                  "d=$(ls /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block/ 2>/dev/null); "
                  "[ -n \"$d\" ] && { echo $d; exit 0; }; sleep 0.2; done; exit 1", check=True).stdout
    return out.split()[0]


def _diagnostics(vm, disk: str) -> str:
    return vm.exec(f"cat /proc/spl/kstat/zfs/lone/state; ls -l /sys/block/{disk} 2>&1; "
                   "timeout 5 zpool status lone 2>&1; echo zpool rc $?; ps -eo pid,stat,wchan:30,cmd | grep '[d]d '; "
                   "dmesg | tail -25; tail -5 /root/advisor.log", timeout=60).stdout


def test_a_pool_that_loses_its_only_disk_pages_and_its_health_is_the_kernels(lab_vm, wrecked_after, tmp_path):
    vm = lab_vm
    disk = _lone_disk(vm)
    vm.exec(["zpool", "create", "-f", "-o", "failmode=wait", "-O", "mountpoint=/lone", "lone", f"/dev/{disk}"],
            check=True)
    vm.exec("dd if=/dev/urandom of=/lone/before bs=1M count=4 conv=fsync status=none", check=True)
    env = {"ZFS_ADVISOR_COMMANDS_INTERVAL_SECONDS": str(COMMANDS_INTERVAL),
           "ZFS_ADVISOR_COMMAND_TIMEOUT_SECONDS": str(COMMAND_TIMEOUT)}
    with exporter_in_vm(vm, env) as url, PrometheusServer(
            tmp_path, targets=[url], scrape_interval="5s", rule_files=[ALERTS]) as prom:
        prom.wait_for('zfs_pool_health_state{pool="lone",state="ONLINE"} == 1', timeout=120)
        assert prom.firing("ZfsPoolSuspended") == [] and prom.firing("ZfsPoolNotOnline") == []

        vm.exec(f"echo 1 > /sys/block/{disk}/device/delete", check=True)
        pulled = time.monotonic()
        # The write blocks once the pool suspends: in the background, never waited for.
        vm.exec("nohup dd if=/dev/urandom of=/lone/after bs=1M count=8 conv=fsync >/dev/null 2>&1 &", check=True)
        critical = 'ALERTS{alertstate="firing",severity="critical",pool="lone"}'
        try:
            alerts = prom.wait_for(critical, timeout=ALERT_WITHIN)
        except TimeoutError as exc:
            pytest.fail(f"{exc}; in the VM:\n{_diagnostics(vm, disk)}\nalerts: {prom.query('ALERTS')}")
        log.info("critical for lone %.0f s after the pull: %s", time.monotonic() - pulled,
                 sorted(a["metric"]["alertname"] for a in alerts))
        # The exported health is the kernel's, read at each scrape, whatever zpool does.
        kstat = vm.exec("cat /proc/spl/kstat/zfs/lone/state", timeout=30, check=True).stdout.strip()
        zpool = vm.exec("timeout 5 zpool list -H -o health lone", timeout=30)
        log.info("state kstat %s; `zpool list` %s; %s", kstat,
                 "hangs (timed out after 5 s)" if zpool.rc == 124 else f"answers {zpool.stdout.strip()!r}",
                 vm.exec("timeout 5 zpool status lone | grep -E 'errors:|sd'", timeout=30).stdout.strip())
        prom.wait_for(f'zfs_pool_health_state{{pool="lone",state="{kstat}"}} == 1', timeout=30)
        if kstat == "SUSPENDED":
            assert prom.firing("ZfsPoolSuspended") and not prom.firing("ZfsPoolNotOnline")
        # The other pool of the VM stays as it was.
        assert prom.query('zfs_pool_health_state{pool="tank",state="ONLINE"} == 1')
