"""What the probe lab tests share: the probe CLI in the guest, its state, and readings of the
ARC and module parameters."""
from __future__ import annotations

import json
import time

import pytest

STATE = "/var/lib/zfs-advisor-labprobe"
PROBE = f"env PYTHONPATH=/project /opt/zfs-advisor-venv/bin/python -m advisor probe --state-dir {STATE}"
# Small and short: 4 fio jobs of 48 MiB, 2 s warm-up, an emulated VM lays out ~8 MB/s.
SMALL = "--file-size 48M --ramp 2 --layout-rate 8M"
PARAMS = "/sys/module/zfs/parameters"


def params(vm, *names: str) -> dict[str, str]:
    """The module parameters `names`, and the ARC limits in effect (arcstats c_max, c_min)."""
    out = vm.exec(" ; ".join(f"cat {PARAMS}/{n}" for n in names)
                  + " ; awk '$1==\"c_max\"{print $3}' /proc/spl/kstat/zfs/arcstats"
                  + " ; awk '$1==\"c_min\"{print $3}' /proc/spl/kstat/zfs/arcstats", check=True).stdout.split()
    return dict(zip([*names, "arcstats.c_max", "arcstats.c_min"], out, strict=True))


def arc_demand_data(vm) -> tuple[int, int]:
    out = vm.exec("awk '$1==\"demand_data_hits\"||$1==\"demand_data_misses\"{print $3}' "
                  "/proc/spl/kstat/zfs/arcstats", check=True).stdout.split()
    return int(out[0]), int(out[1])


def wait_for(vm, command: str, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if vm.exec(command).rc == 0:
            return
        time.sleep(1)
    log = vm.exec("cat /tmp/probe.log").stdout
    pytest.fail(f"timed out waiting for {what}; probe log:\n{log}")


def abort_by_a_writer(vm, probe_args: str, target: str, dd_flags: str, block_kib: int = 64,
                      pace: str = "") -> tuple[dict, float, float]:
    """Start `probe probe_args` in the background and, once its first repeat measures, write 25 MiB
    to `target` (dd with `dd_flags`, blocks of `block_kib`; `pace`: that many seconds between
    blocks, so that the writer outlasts the seconds between two fio runs, when nothing is
    watched) -> (the run as stored, when the writer started, when its first block returned).
    The first block is written on its own to time when the
    writer's I/O reached ZFS: behind the probe's dirty data the write throttle can hold a write
    back for a second or more (a CI-like run, 2026-11-26: fio gone 1.69 s after the writer
    started), and until a write() returns, no counter anywhere shows it."""
    vm.exec(f"nohup sh -c '{PROBE} {probe_args} > /tmp/probe.log 2>&1' >/dev/null 2>&1 &", check=True)
    wait_for(vm, "grep -q 'repeat 1:' /tmp/probe.log", 300, "the first measured repeat")
    rest = (25 << 10) // block_kib - 1
    write = f"dd if=/dev/zero of={target} bs={block_kib}k {dd_flags} status=none"
    rest_cmd = (f"for i in $(seq {rest}); do {write} seek=$i count=1; sleep {pace}; done" if pace
                else f"{write} seek=1 count={rest}")
    started, first = map(float, vm.exec(
        f"date +%s.%N; {write} count=1; date +%s.%N; {rest_cmd}", check=True).stdout.split())
    wait_for(vm, f"! pgrep -f 'advisor probe --state-dir {STATE}' >/dev/null", 120, "the probe to end")
    [last] = json.loads(vm.exec(f"{PROBE} --list --json", check=True).stdout)[:1]
    return last, started, first
