"""A pool of SSD mirrors whose small random writes do not scale because the CPU, not the disks,
is the limit: the lab's ssd-mirror2x2 (four SSDs throttled to 1,500 IOPS, two mirrors) in a VM of
one virtual CPU, under emulation.  The random-I/O efficiency probe must say so: CPU bound (a ZFS
thread saturated, or the host's CPU busy), and not blame the disks.  The one CPU also limits the
raw random baseline (2026-11-28: about 280 reads a second a disk of the 1,500 allowed), which the
layout's figure is made of: the report must call that figure a floor, not a measure of the
disks.  A long lab job (its own boot, about 5 minutes): ZFS_ADVISOR_LAB_LONG=1."""

from __future__ import annotations

import json

import pytest
from labefficiency import RANDOM_PROBE, disk_share, random_lines
from labparams import long_jobs
from labvm import LabVM

from advisor.probe.random_efficiency import RAW_QUEUE_DEPTH

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(not long_jobs(), reason="a long lab job: set ZFS_ADVISOR_LAB_LONG=1 (docs/lab.md)")]
LAYOUT = "ssd-mirror2x2"
CPUS = 1


@pytest.fixture(scope="module")
def one_cpu_vm(_lab_machines):
    _lab_machines.stop()  # one emulated VM at a time
    vm = LabVM("2.3", LAYOUT, cpus=CPUS)
    vm.start()
    try:
        yield vm
    finally:
        vm.stop()


def test_small_random_writes_on_ssd_mirrors_are_cpu_bound_with_one_cpu(one_cpu_vm):
    vm = one_cpu_vm
    assert vm.exec("nproc", check=True).stdout.strip() == str(CPUS)
    vm.exec("sync; sleep 6", check=True)
    out = vm.exec(RANDOM_PROBE, timeout=1800)
    assert out.rc == 0, out.stderr
    report = json.loads(out.stdout)
    lines = random_lines(f"{LAYOUT} ({CPUS} CPU)", report)
    print("\n".join(lines))
    raw = report["raw_random_disks"]["4k"]
    depth = sum(d["queue_depth"] for d in raw.values()) / len(raw)
    print(f"raw baseline: {depth:.1f} requests in flight per disk of {RAW_QUEUE_DEPTH}, disks busy "
          f"{sum(d['busy_ratio'] for d in raw.values()) / len(raw):.0%}")
    # the disks (1,500 IOPS each) were not what limited the raw baseline: the one CPU was
    assert min(report["raw_random_iops"]["4k"].values()) < 0.5 * vm.layout.disks[0].iops, lines
    for result in report["random_results"]:
        share = disk_share(result, report["raw_random_iops"]["4k"])
        cpu = [d for d in result["diagnosis"] if d.startswith("CPU")]
        print(f"{result['test']}: {result['ratio']:.0%} of the layout, disks at {share:.0%} of their raw IOPS; {cpu}")
        # every test names the CPU and none blames the disks; and the layout's figure, made of a raw
        # rate the CPU set, is called a floor
        assert cpu and not any(d.startswith("disk bound") for d in result["diagnosis"]), lines
        assert any(d.startswith("the raw baseline kept") and "is a floor" in d for d in result["diagnosis"]), lines
