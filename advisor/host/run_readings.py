"""The counters a shell reads right before and right after a measured run, in one text.

The lab's application runs (tests/lab/app_grid.py, docs/apps.md) print, around the application's
command and in the guest itself, two readings of

    @@STAT      /proc/stat
    @@DISKSTATS /proc/diskstats
    @@CLOCK     seconds since the epoch (date +%s.%N)

joined by `@@SPLIT` lines and followed by the application's report.  The lab's scripts read
them live; `zfs-advisor evaluate --apps` reads the committed ones back to see whether the disks
ran at their throttle.  The parsers are the daemon's own (host/cpustat.py, host/disks.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from advisor.host.cpustat import CpuTimes, parse_cpu_times
from advisor.host.disks import parse_diskstats
from advisor.hostmodel.facts import DiskStats

SPLIT = "@@SPLIT\n"
# the lab guest's disks behind qemu's SCSI controller: the pool's (its root disk is virtio, vda)
_SCSI_DISK = re.compile(r"sd[a-z]+")


@dataclass(frozen=True)
class Reading:
    cpu: CpuTimes
    disks: dict[str, DiskStats]
    clock: float


def parse_reading(text: str) -> Reading:
    """One reading's output -> its three parts; ValueError when a part is missing."""
    parts: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("@@"):
            current = line[2:].strip()
            parts[current] = []
        elif current:
            parts[current].append(line)
    missing = {"STAT", "DISKSTATS", "CLOCK"} - parts.keys()
    if missing:
        raise ValueError(f"the guest's reading lacks {', '.join(sorted(missing))}")
    return Reading(parse_cpu_times("\n".join(parts["STAT"])), parse_diskstats("\n".join(parts["DISKSTATS"])),
                   float(parts["CLOCK"][0]))


def parse_run(text: str) -> tuple[Reading, Reading, str]:
    """A run's raw output (before, `@@SPLIT`, after, `@@SPLIT`, the report) -> its two readings
    and the report; ValueError when it is not one."""
    parts = text.split(SPLIT, 2)
    if len(parts) < 2:
        raise ValueError("not a run's readings: no @@SPLIT between the two")
    return parse_reading(parts[0]), parse_reading(parts[1]), parts[2] if len(parts) > 2 else ""


def scsi_disks(reading: Reading) -> list[str]:
    """The whole SCSI disks of a reading (sda, sdb, ...; not their partitions): the lab's pool disks."""
    return sorted(n for n in reading.disks if _SCSI_DISK.fullmatch(n))


def completed_ops(before: Reading, after: Reading, disks: list[str]) -> dict[str, float]:
    """Each disk's completed reads and writes a second between the two readings (disks in both)."""
    seconds = after.clock - before.clock
    if seconds <= 0:
        return {}
    return {name: (_ops(after.disks[name]) - _ops(before.disks[name])) / seconds
            for name in disks if name in before.disks and name in after.disks}


def _ops(d: DiskStats) -> int:
    return d.reads_completed + d.writes_completed


def throttle_shares(before: Reading, after: Reading, disks: list[str], iops: float, bps: float) -> dict[str, float]:
    """Each disk's share of its throttle between the two readings: the larger of its completed
    operations over `iops` and its bytes read and written over `bps` (a throttle with both limits
    holds a disk at whichever it reaches first: small requests at the IOPS, large ones at the MB/s)."""
    seconds = after.clock - before.clock
    if seconds <= 0 or iops <= 0 or bps <= 0:
        return {}
    out = {}
    for name in disks:
        if name in before.disks and name in after.disks:
            a, b = after.disks[name], before.disks[name]
            ops = (_ops(a) - _ops(b)) / seconds
            moved = (a.sectors_read + a.sectors_written - b.sectors_read - b.sectors_written) * 512 / seconds
            out[name] = max(ops / iops, moved / bps)
    return out
