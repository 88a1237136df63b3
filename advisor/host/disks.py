"""Block devices: /sys/block/<dev>/{size,queue/*,device/*} and /proc/diskstats.

Sector sizes, rotational and queue settings decide ashift and vdev-queue
advice; partitions map a pool's leaf vdevs (sda1) back to their disk (sda).
"""
from __future__ import annotations

import re

from advisor.host.domains import count
from advisor.host.files import HostFiles
from advisor.host.parsing import INT_MAX, ParseError, printable_text, shown, to_int
from advisor.hostmodel.facts import Disk, DiskStats

SYS_BLOCK = "/sys/block"
DISKSTATS = "/proc/diskstats"
# Devices that are never the disks under a pool: loop/ram devices, optical
# drives, and zd* (the block devices of ZFS's own zvols).
_IGNORED_PREFIXES = ("loop", "ram", "zram", "sr", "fd", "zd", "nbd")
_MS = 1e-3


def parse_diskstats(text: str) -> dict[str, DiskStats]:
    """-> {device: counters}; ParseError on any line that is not a diskstats line."""
    stats: dict[str, DiskStats] = {}
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if len(f) < 14:  # major minor name and at least 11 counters (kernel 2.6)
            raise ParseError(f"{DISKSTATS}: not a diskstats line: {shown(line)}")
        name = f[2]
        if name in stats:
            raise ParseError(f"{DISKSTATS}: two lines for {shown(name)}")
        n = [count(x, f"{DISKSTATS} {name}") for x in f[3:]]
        extra: dict[str, float | int] = {}
        if len(n) >= 15:  # kernel >= 4.18: discards
            extra.update(
                discards_completed=n[11], discards_merged=n[12], sectors_discarded=n[13], discard_seconds=n[14] * _MS
            )
        if len(n) >= 17:  # kernel >= 5.5: flushes
            extra.update(flushes_completed=n[15], flush_seconds=n[16] * _MS)
        stats[name] = DiskStats(
            reads_completed=n[0],
            reads_merged=n[1],
            sectors_read=n[2],
            read_seconds=n[3] * _MS,
            writes_completed=n[4],
            writes_merged=n[5],
            sectors_written=n[6],
            write_seconds=n[7] * _MS,
            ios_in_progress=n[8],
            io_seconds=n[9] * _MS,
            weighted_io_seconds=n[10] * _MS,
            **extra,
        )
    return stats


def parse_scheduler(text: str) -> str | None:
    """'mq-deadline kyber [bfq] none' -> 'bfq'; 'none' -> 'none'."""
    words = text.split()
    for w in words:
        if w.startswith("[") and w.endswith("]"):
            return w[1:-1]
    return words[0] if len(words) == 1 else None


class _Attributes:
    """One block device's sysfs attributes, each checked against what the kernel prints for it.

    A value outside its domain (rotational not 0 or 1, a block size that is no power of two,
    bytes that are not text, a file with no bytes at all where the kernel always prints a line)
    is left out as None and its reason kept in `errors`: the disks source then reports failed."""

    def __init__(self, files: HostFiles, base: str, errors: list[str]):
        self.files, self.base, self.errors = files, base, errors

    def raw(self, name: str) -> str | None:
        try:
            return self.files.read_text(f"{self.base}/{name}")
        except OSError:
            return None  # absent for this kind of device

    def _check(self, name: str, parse):
        raw = self.raw(name)
        if raw is None:
            return None
        try:
            if not raw:
                raise ParseError("the file is empty")
            return parse(printable_text(raw, "value"))
        except ParseError as exc:
            self.errors.append(f"{self.base}/{name}: {exc}")
            return None

    def text(self, name: str, empty_ok: bool = False) -> str | None:
        """Free text (a model, a vendor); `empty_ok`: the kernel may print nothing (a virtio serial)."""
        if empty_ok and self.raw(name) == "":
            return None
        return self._check(name, lambda value: value or None)

    def integer(self, name: str, low: int = 0, high: int = INT_MAX, power_of_two: bool = False) -> int | None:
        def parse(value: str) -> int:
            number = to_int(value, "value")
            if not low <= number <= high or power_of_two and number & (number - 1):
                raise ParseError(f"{shown(value)} is not {'a power of two ' if power_of_two else 'an integer '}"
                                 f"from {low} to {high}")
            return number
        return self._check(name, parse)

    def scheduler(self) -> str | None:
        def parse(value: str) -> str | None:
            if not _SCHEDULERS.fullmatch(value):
                raise ParseError(f"{shown(value)} is not a list of I/O schedulers")
            return parse_scheduler(value)  # None: a list without the one in use marked
        return self._check("queue/scheduler", parse)


# 'none' or 'mq-deadline kyber [bfq] none': scheduler names, the one in use in brackets.
_SCHEDULERS = re.compile(r"(\[?[\w-]+\]?)( \[?[\w-]+\]?)*")


def read_disk(files: HostFiles, name: str, stats: dict[str, DiskStats], errors: list[str] | None = None) -> Disk:
    base = f"{SYS_BLOCK}/{name}"
    attr = _Attributes(files, base, errors if errors is not None else [])
    sectors = attr.integer("size", high=INT_MAX // 512)
    rotational = attr.integer("queue/rotational", high=1)
    try:
        entries = files.listdir(base)
    except OSError:
        entries = []
    return Disk(
        name=name,
        model=attr.text("device/model"),
        vendor=attr.text("device/vendor"),
        serial=attr.text("device/serial", empty_ok=True),
        size_bytes=sectors * 512 if sectors is not None else None,  # always 512-byte units
        logical_block_size=attr.integer("queue/logical_block_size", 512, 1 << 16, power_of_two=True),
        physical_block_size=attr.integer("queue/physical_block_size", 512, 1 << 20, power_of_two=True),
        rotational=None if rotational is None else bool(rotational),
        nr_requests=attr.integer("queue/nr_requests"),
        queue_depth=attr.integer("device/queue_depth"),
        scheduler=attr.scheduler(),
        partitions=[e for e in entries if e.startswith(name) and e != name],
        stats=stats.get(name),
    )


def read_disks(files: HostFiles, errors: list[str] | None = None) -> list[Disk]:
    """The block devices from sysfs, without counters (`with_stats` adds them); the reason for
    each attribute left out as not understood goes to `errors`."""
    names = [n for n in files.listdir(SYS_BLOCK) if not n.startswith(_IGNORED_PREFIXES)]
    return [read_disk(files, n, {}, errors) for n in names]


def read_diskstats(files: HostFiles) -> dict[str, DiskStats]:
    return parse_diskstats(files.read_text(DISKSTATS))


def with_stats(disks: list[Disk], stats: dict[str, DiskStats]) -> list[Disk]:
    """Copies of `disks` (read earlier) carrying the /proc/diskstats counters in `stats`."""
    return [d.model_copy(update={"stats": stats.get(d.name)}) for d in disks]


def disk_of_device(device_path: str, disks: list[Disk]) -> str | None:
    """'/dev/sda1' or '/dev/sda' -> 'sda', if that block device is known."""
    dev = device_path.rsplit("/", 1)[-1]
    for disk in disks:
        if dev == disk.name or dev in disk.partitions:
            return disk.name
    return None
