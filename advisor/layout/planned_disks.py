"""The disks to plan for, from what a user types (CLI flags, query parameters) or from a stored
`probe --efficiency` run; bad input raises PlanInputError with the reason and the valid choices."""
from __future__ import annotations

import re
from typing import Any

from advisor.engine.units import parse_size
from advisor.layout.predict import DiskSpec

MEDIA = ("hdd", "ssd", "nvme", "unknown")
ASHIFTS = tuple(range(9, 17))
# Datasheet units: K, M, G, T are powers of 1000 (a "4 TB" disk, "200 MB/s"); KiB .. TiB of 1024.
_DECIMAL = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([KMGTP])(i?)B?)?\s*(?:/s)?\s*$", re.IGNORECASE)
AMOUNT_EXAMPLES = ["4T", "4TB", "3.6TiB", "200M", "200MB/s", "150"]
# What describes the disks and the blocks (GET /v1/plan's query parameters; the CLI's flags)
PARAMETERS = ("disks", "size", "seq", "iops", "write_seq", "write_iops", "media", "ashift", "recordsize", "block")


class PlanInputError(ValueError):
    def __init__(self, reason: str, valid: list[str] | None = None):
        super().__init__(reason)
        self.reason, self.valid = reason, valid


MAX_AMOUNT = 1e18  # 1 EB a disk, 1 EB/s, 10^18 IOPS: beyond any disk, and keeps the arithmetic small


def parse_amount(text: str, what: str) -> float:
    """'4T' -> 4e12, '3.6TiB' -> 3.6 * 2**40, '200MB/s' -> 2e8, '150' -> 150."""
    m = _AMOUNT.match(str(text)) if len(str(text)) <= 32 else None
    if not m:
        raise PlanInputError(f"{what}: not an amount: {str(text)[:32]!r}", AMOUNT_EXAMPLES)
    number, unit, binary = float(m.group(1)), (m.group(2) or "").upper(), m.group(3)
    value = number * (1024 ** " KMGTP".index(unit) if binary else _DECIMAL[unit])
    if not 0 < value <= MAX_AMOUNT:
        raise PlanInputError(f"{what} must be more than 0 and at most 1E (10^18)", AMOUNT_EXAMPLES)
    return value


def parse_block(text: str, what: str) -> int:
    """A ZFS block size (recordsize): a power of 2 from 512 to 16M."""
    valid = ["512", "4K", "8K", "16K", "32K", "64K", "128K", "1M", "16M"]
    try:
        value = parse_size(text)
    except ValueError:
        raise PlanInputError(f"{what}: not a size: {str(text)[:32]!r}", valid) from None
    if value < 512 or value > 16 << 20 or value & (value - 1):
        raise PlanInputError(f"{what} must be a power of 2 from 512 to 16M, not {str(text)[:32]!r}", valid)
    return value


def _count(text: Any) -> int:
    text = str(text)
    if not (len(text) <= 3 and text.isascii() and text.isdigit()):  # before int(): not thousands of digits
        raise PlanInputError(f"disks: not a whole number from 1 to 256: {text[:32]!r}", ["1-256"])
    n = int(text)
    if not 1 <= n <= 256:
        raise PlanInputError(f"disks must be from 1 to 256, not {n}", ["1-256"])
    return n


def _choice(value: str | int | None, valid: tuple, what: str, default: Any) -> Any:
    if value is None or value == "":
        return default
    for v in valid:
        if str(v) == str(value):
            return v
    raise PlanInputError(f"unknown {what} {str(value)[:32]!r}", [str(v) for v in valid])


def given_disks(disks: Any, size: str, seq: str, iops: str | None = None, write_seq: str | None = None,
                write_iops: str | None = None, media: str | None = None, ashift: str | int | None = None) -> DiskSpec:
    """Disks described by their datasheet (or measured) numbers; writes as reads unless given."""
    missing = [name for name, v in (("disks", disks), ("size", size), ("seq", seq)) if v in (None, "")]
    if missing:
        raise PlanInputError(f"missing {', '.join(missing)}", list(PARAMETERS))
    read_rate = parse_amount(seq, "seq")
    size_bytes = int(parse_amount(size, "size"))
    if size_bytes < 64 << 20:
        raise PlanInputError("size: a disk of less than 64 MiB cannot be a vdev (SPA_MINDEVSIZE)", AMOUNT_EXAMPLES)
    read_iops = parse_amount(iops, "iops") if iops not in (None, "") else None
    return DiskSpec(
        count=_count(disks), size_bytes=size_bytes,
        seq_read_bytes_per_second=read_rate,
        seq_write_bytes_per_second=parse_amount(write_seq, "write_seq") if write_seq else read_rate,
        random_read_iops=read_iops,
        random_write_iops=parse_amount(write_iops, "write_iops") if write_iops else read_iops,
        media=_choice(media, MEDIA, "media", "unknown"), ashift=_choice(ashift, ASHIFTS, "ashift", 12))


def measured_disks(report: dict[str, Any], pool: str, iops: str | None = None, write_iops: str | None = None) -> DiskSpec:
    """The member disks of `pool` as its stored `probe --efficiency` run measured them: the slowest
    disk's raw sequential read rate (a vdev goes at its slowest member's), taken for writes too
    (the run never writes to a raw disk), and its raw random 4K read IOPS when the run measured
    them and `iops` is not given, the smallest disk's size, the pool's ashift."""
    descriptor = report.get("pool") or {}
    disks = descriptor.get("disks") or []
    rates = [r for r in (report.get("raw_read_bytes_per_second") or {}).values() if r and r > 0]
    if not disks or not rates:
        raise PlanInputError(f"the stored efficiency run of pool {pool!r} has no disk sizes or rates")
    # the run's raw random 4K reads (read-only, a queue of 32), if it measured them: the slowest disk
    measured_iops = [r for r in ((report.get("raw_random_iops") or {}).get("4k") or {}).values() if r and r > 0]
    read_iops = parse_amount(iops, "iops") if iops else (min(measured_iops) if measured_iops else None)
    media = {d.get("media") for d in disks}
    return DiskSpec(
        count=len(disks), size_bytes=min(int(d["size_bytes"]) for d in disks),
        seq_read_bytes_per_second=min(rates), seq_write_bytes_per_second=min(rates),
        random_read_iops=read_iops, random_write_iops=parse_amount(write_iops, "write_iops") if write_iops else read_iops,
        media=media.pop() if len(media) == 1 and None not in media else "mixed",
        logical_block_size=max(int(d.get("logical_block_size") or 512) for d in disks),
        ashift=int(descriptor.get("ashift") or 12),
        source=f"zfs-advisor probe --pool {pool} --efficiency (raw reads of its {len(disks)} disks"
               + (", random 4K too" if measured_iops and not iops else "") + ", writes taken as reads)")
