"""Block devices: /sys/block/<dev>/{size,queue/*,device/*} and /proc/diskstats.

Sector sizes, rotational and queue settings decide ashift and vdev-queue
advice; partitions map a pool's leaf vdevs (sda1) back to their disk (sda).
"""
from __future__ import annotations

from advisor.facts import Disk, DiskStats
from advisor.host.files import HostFiles
from advisor.host.parsing import ParseError, shown, to_int

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
        n = [to_int(x, f"{DISKSTATS} {name}") for x in f[3:]]
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


def _text(files: HostFiles, path: str) -> str | None:
    try:
        value = files.read_text(path).strip()
    except OSError:
        return None
    return value or None


def _int(files: HostFiles, path: str) -> int | None:
    value = _text(files, path)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def read_disk(files: HostFiles, name: str, stats: dict[str, DiskStats]) -> Disk:
    base = f"{SYS_BLOCK}/{name}"
    sectors = _int(files, f"{base}/size")
    rotational = _int(files, f"{base}/queue/rotational")
    scheduler = _text(files, f"{base}/queue/scheduler")
    try:
        entries = files.listdir(base)
    except OSError:
        entries = []
    return Disk(
        name=name,
        model=_text(files, f"{base}/device/model"),
        vendor=_text(files, f"{base}/device/vendor"),
        serial=_text(files, f"{base}/device/serial"),
        size_bytes=sectors * 512 if sectors is not None else None,  # always 512-byte units
        logical_block_size=_int(files, f"{base}/queue/logical_block_size"),
        physical_block_size=_int(files, f"{base}/queue/physical_block_size"),
        rotational=None if rotational is None else bool(rotational),
        nr_requests=_int(files, f"{base}/queue/nr_requests"),
        queue_depth=_int(files, f"{base}/device/queue_depth"),
        scheduler=parse_scheduler(scheduler) if scheduler else None,
        partitions=[e for e in entries if e.startswith(name) and e != name],
        stats=stats.get(name),
    )


def read_disks(files: HostFiles) -> list[Disk]:
    """The block devices from sysfs, without counters (`with_stats` adds them)."""
    names = [n for n in files.listdir(SYS_BLOCK) if not n.startswith(_IGNORED_PREFIXES)]
    return [read_disk(files, n, {}) for n in names]


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
