"""Lab: a `zfs set recordsize=...` under a steady fio load, and the verdict GET /v1/changes gives.

The daemon runs in the VM (the working copy shared at /project) with commands every 5 s and a
60 s window. fio writes 1 MiB blocks sequentially into new 64 MiB files in tank/chg, one after
the other (each file unlinked after it is written: a file's block size is fixed once it has more
than one block, so only new files take a new recordsize). tank/chg starts at recordsize=4K,
compression off; after a full window the test sets recordsize=1M, which cuts the blocks per MiB
from 256 to 1 and so the work per byte: the bandwidth and the write IOPS the dataset sees must
come out "better", with an interval of the ratio above 1. On 2026-11-28: better, bandwidth ratio
4.36 (3.24 to 5.86), noise floor 0.43, 11 intervals a 90 s window; with 60 s, 3.46 (2.40 to 4.99),
noise floor 0.38, 7 intervals (docs/lab.md).

A long lab job since 2026-11-28 (ZFS_ADVISOR_LAB_LONG=1; 224 s, CI's 60-minute budget): the
verdicts' arithmetic is the unit tier's (tests/unit/test_changes*.py), this is its measurement.
"""
from __future__ import annotations

import json
import os
import time

import pytest
from labexporter import PORT, PY, exporter_in_vm
from labparams import lab_params

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.environ.get("ZFS_ADVISOR_LAB_LONG") != "1",
                       reason="a long lab job: set ZFS_ADVISOR_LAB_LONG=1 (docs/lab.md)"),
    pytest.mark.parametrize("lab_vm", lab_params(["ssd-mirror2x2"], lines=["2.3"]), indirect=True, scope="session"),
]
COMMANDS_INTERVAL = 5
WINDOW = 60
DATASET = "tank/chg"
STATE = "/root/changes-state"
FIO = ["fio", "--name=steady", f"--directory=/{DATASET}", "--rw=write", "--bs=1M", "--size=64M",
       "--ioengine=psync", "--unlink_each_loop=1", "--loops=100000", "--runtime=600"]


def changes(vm) -> dict:
    out = vm.exec(f"{PY} -c 'import urllib.request as u; "
                  f"print(u.urlopen(\"http://127.0.0.1:{PORT}/v1/changes?dataset={DATASET}\").read().decode())'",
                  check=True).stdout
    return json.loads(out)


def _diagnostics(vm) -> str:
    return vm.exec("tail -5 /root/fio-changes.log; tail -20 /root/advisor.log; zfs get -Hp recordsize "
                   f"{DATASET}", timeout=60).stdout


def test_a_recordsize_change_under_load_gets_a_verdict_with_the_right_sign(lab_vm):
    vm = lab_vm
    vm.exec(["zfs", "create", "-o", "recordsize=4K", "-o", "compression=off", DATASET], check=True)
    env = {"ZFS_ADVISOR_COMMANDS_INTERVAL_SECONDS": str(COMMANDS_INTERVAL),
           "ZFS_ADVISOR_CHANGES_WINDOW_SECONDS": str(WINDOW), "ZFS_ADVISOR_STATE_DIR": STATE}
    try:
        with exporter_in_vm(vm, env):
            vm.exec(f"nohup {' '.join(FIO)} >/root/fio-changes.log 2>&1 & echo $! >/root/fio-changes.pid",
                    check=True)
            time.sleep(WINDOW + 20)  # a whole window of steady load, after fio's first file
            vm.exec(["zfs", "set", "recordsize=1M", DATASET], check=True)
            deadline = time.monotonic() + WINDOW + 90
            record = None
            while time.monotonic() < deadline:
                found = changes(vm)["changes"]
                record = next((c for c in found if c["parameter"] == "recordsize"), None)
                if record is not None and record["status"] == "done":
                    break
                time.sleep(COMMANDS_INTERVAL)
            print(json.dumps(record, indent=1))  # the measured effect, in the test's output
            assert record is not None and record["status"] == "done", (record, _diagnostics(vm))
            assert (record["old"], record["new"]) == ("4096", "1048576")
            effects = {e["metric"]: e for e in record["effects"]}
            bandwidth = effects["bandwidth"]
            assert bandwidth["verdict"] == "better" and bandwidth["interval"][0] > 1, (bandwidth, _diagnostics(vm))
            assert record["verdict"] == "better" and effects["iops"]["ratio"] > 1, record
            metrics = vm.exec(f"{PY} -c 'import urllib.request as u; "
                              f"print(u.urlopen(\"http://127.0.0.1:{PORT}/metrics\").read().decode())'",
                              check=True).stdout
            lines = [l for l in metrics.splitlines() if l.startswith("zfs_advisor_change_")]
            print("\n".join(lines))
            assert any('metric="bandwidth"' in l and 'dataset="tank/chg"' in l for l in lines), lines
    finally:
        vm.exec("kill $(cat /root/fio-changes.pid) 2>/dev/null; sleep 1; "
                f"zfs destroy -r {DATASET}; rm -rf {STATE} /root/fio-changes.*", timeout=120)
