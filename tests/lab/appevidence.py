"""What set an application cell's pace: the guest's counters read right before and right after the
application's measured run, in the guest itself (one shell: no ssh round trip inside the window),
and the host's CPU over the same cell.

The guest prints, around the run, two readings of

    @@STAT      /proc/stat
    @@DISKSTATS /proc/diskstats
    @@CLOCK     seconds since the epoch (date +%s.%N)

(parsed by advisor/host/run_readings.py), and this module turns them into the disks' busy share
(io_ticks, field 13 of /proc/diskstats: iostat(1)'s %util), the guest's CPU busy and steal shares
(proc(5)), and a verdict.  The parsers are the daemon's own (advisor/host/cpustat.py,
advisor/host/disks.py), the thresholds those of a probe run's verdict (advisor/evidence/bound.py);
the rule differs in one point: a probe's own CPU use is a cost of the setting, an application's is
the application, so a saturated CPU with idle disks is `cpu` whoever used it.  Under qemu's TCG the
guest sees no steal: a host shared with other work shows as a busier guest CPU (each emulated
instruction takes longer), so the host's own CPU is recorded beside it.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from advisor.evidence.bound import CPU_SATURATED, DISKS_BUSY
from advisor.host.cpustat import cpu_share
from advisor.host.run_readings import Reading, completed_ops, parse_reading, parse_run, scsi_disks

# Reading and parse_reading live in advisor/host/run_readings.py (evaluate --apps reads the runs too);
# the lab's scripts and tests still take them from here
__all__ = ["SNAPSHOT", "CellLoad", "Reading", "cell_load", "parse_reading", "verdict"]

SNAPSHOT = "{ echo @@STAT; cat /proc/stat; echo @@DISKSTATS; cat /proc/diskstats; echo @@CLOCK; date +%s.%N; }"


@dataclass(frozen=True)
class CellLoad:
    seconds: float  # the application's run, between the guest's two readings
    disks_busy: dict[str, float]  # each pool disk's share of the window with I/O in flight
    cpu_busy: float | None  # the guest's CPUs, of every CPU's time (steal included)
    cpu_steal: float | None
    host_cpu_busy: float | None = None  # the host's CPUs over the cell (qemu and everything else)
    # each pool disk's completed reads and writes a second: under qemu's IOPS throttle a disk can run
    # at its limit while io_ticks says half busy (docs/apps.md, "Throttles"), so both are kept
    disks_ops: dict[str, float] = field(default_factory=dict)

    @property
    def busiest(self) -> tuple[str, float]:
        return max(self.disks_busy.items(), key=lambda kv: (kv[1], kv[0])) if self.disks_busy else ("", 0.0)

    @property
    def mean_disk_busy(self) -> float:
        return sum(self.disks_busy.values()) / len(self.disks_busy) if self.disks_busy else 0.0


def cell_load(before: Reading, after: Reading, pool_disks: list[str], host_cpu_busy: float | None = None) -> CellLoad:
    seconds = after.clock - before.clock
    busy = {name: min(1.0, max(0.0, after.disks[name].io_seconds - before.disks[name].io_seconds) / seconds)
            for name in pool_disks if name in before.disks and name in after.disks and seconds > 0}
    ops = completed_ops(before, after, list(busy))
    share = cpu_share(before.cpu, after.cpu)
    return CellLoad(seconds, busy, share.busy if share else None, share.steal if share else None, host_cpu_busy, ops)


def verdict(load: CellLoad) -> tuple[str, str]:
    """(`storage` | `cpu` | `unclear`, why) for one application run."""
    disk, disk_busy = load.busiest
    cpu = max(c for c in (load.cpu_busy, load.host_cpu_busy, 0.0) if c is not None)
    if not load.disks_busy or load.cpu_busy is None:
        return "unclear", "not judged: the pool's disks' or the guest's CPU counters were not read"
    text = (f"busiest disk {disk} {disk_busy:.0%} busy over {load.seconds:.0f} s, guest CPU {load.cpu_busy:.0%}"
            + (f", host CPU {load.host_cpu_busy:.0%}" if load.host_cpu_busy is not None else ""))
    disks_busy, saturated = disk_busy >= DISKS_BUSY, cpu >= CPU_SATURATED
    if disks_busy and not saturated:
        return "storage", f"the storage set the pace: {text}"
    if saturated and not disks_busy:
        return "cpu", f"the CPU set the pace, not the storage: {text}"
    if saturated:
        return "unclear", f"the disks and the CPU were both near saturation: {text}"
    return "unclear", f"neither the disks nor the CPU were saturated (latency or a lock set the pace): {text}"


def main(paths: list[str]) -> None:
    """Each run's raw output (app-grid --objsets: run.txt, or a grid's runs/*.txt) -> per pool disk
    (the sdX the readings hold) its busy share and completed operations a second."""
    for path in paths:
        b, a, _ = parse_run(Path(path).read_text())
        disks = scsi_disks(b)
        load = cell_load(b, a, disks)
        print(f"{path}: {load.seconds:.1f} s; " + ", ".join(
            f"{n} {load.disks_busy[n]:.0%} busy {load.disks_ops[n]:.1f} ops/s" for n in disks))


if __name__ == "__main__":
    main(sys.argv[1:])
