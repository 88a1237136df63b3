"""A CPU hog beside a probe (docs/probes.md, "What set a run's pace"): busy loops on every vCPU,
started once the probe has passed its idle check, make every measured repeat CPU-bound; the run is
flagged so, and the answer stays what it was before the probe, naming the run set aside. The same
probe without the hog measures the storage: no repeat CPU-bound, and the answer cites it.

Run on 2026-12-07 (984 s; docs/lab.md has its figures): with the hog every repeat was `cpu`; alone,
every repeat was `unclear` (the emulated CPUs 86-90 % busy with the probe's own work).
"""

from __future__ import annotations

import json
import os

import pytest

from labchecks import check_decided_from_the_probe
from labparams import lab_params
from labprobe import SMALL, wait_for

pytestmark = [
    pytest.mark.lab,
    # two probes, about 16 minutes with the boot (the hog slows the emulated VM about sixfold): a long
    # lab job, run by hand, more than CI's lab budget has room for
    pytest.mark.skipif(os.environ.get("ZFS_ADVISOR_LAB_LONG") != "1",
                       reason="a long lab job: set ZFS_ADVISOR_LAB_LONG=1 (docs/lab.md)"),
]

LAYOUT = lab_params(["ssd-mirror2x2"], lines=["2.3"])
STATE = "/var/lib/zfs-advisor-labhog"
PY = "env PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python -m advisor"
PROBE = f"{PY} probe --state-dir {STATE}"
ARGS = f"--pool tank --workload postgres --param recordsize=8K,128K --budget 300s {SMALL}"
# the hog slows the emulated VM: at 300 s the first run measured 128K twice and ran out of its budget
HOGGED_ARGS = ARGS.replace("--budget 300s", "--budget 900s")
HOG_PIDS = "/tmp/hog.pids"


def _recordsize(vm) -> dict:
    out = vm.exec(f"env ZFS_ADVISOR_STATE_DIR={STATE} {PY} recommend --workload postgres --pool tank --json",
                  check=True).stdout
    return next(r for r in json.loads(out)["recommendations"] if r["parameter"] == "recordsize")


def _decision(rec: dict) -> tuple:
    return rec["status"], rec["recommended"], rec["source"], rec["expected_effect"]


def _shown(vm, run_id: int) -> dict:
    return json.loads(vm.exec(f"{PROBE} --show {run_id} --json").stdout)


def _hogged_probe(vm) -> int:
    """The probe in the background; once it passed its idle check (its first candidate's scratch
    dataset is being made), one busy loop per vCPU until it ends -> its run id."""
    vm.exec(f"nohup sh -c '{PROBE} {HOGGED_ARGS} > /tmp/probe.log 2>&1' >/dev/null 2>&1 &", check=True)
    wait_for(vm, "grep -q 'creating scratch dataset' /tmp/probe.log", 120, "the probe to pass its idle check")
    vm.exec(f"rm -f {HOG_PIDS}; for i in $(seq $(nproc)); do nohup sh -c 'while :; do :; done' >/dev/null 2>&1 & "
            f"echo $! >> {HOG_PIDS}; done", check=True)
    try:
        wait_for(vm, f"! pgrep -f 'advisor probe --state-dir {STATE}' >/dev/null", 1000, "the probe to end")
    finally:
        vm.exec(f"kill $(cat {HOG_PIDS}); rm -f {HOG_PIDS}; sleep 6")  # and a txg commit: the pool idle again
    [last] = json.loads(vm.exec(f"{PROBE} --list --json", check=True).stdout)[:1]
    return last["id"]


@pytest.mark.parametrize("lab_vm", LAYOUT, indirect=True, scope="session")
def test_a_probe_beside_a_cpu_hog_is_set_aside_and_the_same_probe_alone_measures_the_storage(lab_vm):
    vm = lab_vm
    vm.exec(f"rm -rf {STATE}", check=True)
    before = _recordsize(vm)

    hogged = _hogged_probe(vm)
    shown = _shown(vm, hogged)
    print(f"with the hog: {shown['bound']}; " + "; ".join(
        f"{r['value']} #{r['repeat']} {r['iops']:,.0f} IOPS {r['bound']}: {r['bound_reason']}" for r in shown["results"]))
    assert shown["run"]["status"] == "completed", (shown["run"]["status"], shown["run"].get("reason"))
    assert shown["bound"]["verdict"] == "cpu" and {r["bound"] for r in shown["results"]} == {"cpu"}
    after = _recordsize(vm)
    assert _decision(after) == _decision(before), (before, after)
    assert f"Probe run {hogged} on this pool was set aside" in after["explanation"]

    vm.exec("sleep 6", check=True)
    alone = json.loads(vm.exec(f"{PROBE} {ARGS} --json", check=True, timeout=900).stdout)
    print(f"alone: {alone['bound']}; " + "; ".join(
        f"{r['value']} #{r['repeat']} {r['iops']:,.0f} IOPS {r['bound']}: {r['bound_reason']}" for r in alone["results"]))
    assert alone["run"]["status"] == "completed" and "cpu" not in {r["bound"] for r in alone["results"]}
    [ev] = alone["evidence"]
    check_decided_from_the_probe(_recordsize(vm), ev, alone["run"]["id"])
