"""What a window of one dataset's objset counters shows.

The counters (/proc/spl/kstat/zfs/<pool>/objset-*) count the file-system calls that reach the
dataset: reads and writes with their bytes (so request sizes are the application's, before any
record or aggregation), and from OpenZFS 2.2 its ZIL commits (`zil_commit_count`: fsync,
fdatasync, O_SYNC/O_DSYNC writes, sync=always). Nothing in them says where in a file a request
went, so randomness is not observed per dataset: it is left out (None) rather than guessed.
"""
from __future__ import annotations

from dataclasses import dataclass

# reads, writes, bytes read, bytes written, ZIL commits (-1: the kstat has none, before OpenZFS 2.2)
Counters = tuple[int, int, int, int, int]
COUNTER_NAMES = ("reads", "writes", "nread", "nwritten", "zil_commit_count")


def counters(values: dict) -> Counters:
    """An objset kstat's values (name -> int) as Counters."""
    got = [values.get(name) for name in COUNTER_NAMES]
    fixed = tuple(v if isinstance(v, int) else (-1 if i == 4 else 0) for i, v in enumerate(got))
    return fixed  # type: ignore[return-value]  # one int per COUNTER_NAMES: a Counters


@dataclass(frozen=True, slots=True)
class Traits:
    seconds: float
    operations: int
    read_fraction: float  # of operations
    mean_read_bytes: float | None  # None: no reads
    mean_write_bytes: float | None
    syncs_per_write: float | None  # None: no writes, or no ZIL counters
    random: bool | None = None  # not observable from objset counters

    @property
    def operations_per_second(self) -> float:
        return self.operations / self.seconds if self.seconds > 0 else 0.0

    def shown(self) -> dict:
        return {
            "seconds": round(self.seconds, 1),
            "operations_per_second": round(self.operations_per_second, 1),
            "read_fraction": round(self.read_fraction, 3),
            "mean_read_bytes": None if self.mean_read_bytes is None else round(self.mean_read_bytes),
            "mean_write_bytes": None if self.mean_write_bytes is None else round(self.mean_write_bytes),
            "syncs_per_write": None if self.syncs_per_write is None else round(self.syncs_per_write, 4),
            "random": self.random,
        }


def window_traits(before: Counters, after: Counters, seconds: float) -> Traits | None:
    """The traits of the I/O between two readings; None when a counter went back (the dataset was
    re-created, or the module reloaded) and the window means nothing."""
    delta = [b - a for a, b in zip(before, after, strict=True)]
    if any(d < 0 for d in delta[:4]):
        return None
    reads, writes, nread, nwritten, commits = delta
    ops = reads + writes
    syncs = None
    if writes and before[4] >= 0 and after[4] >= 0 and commits >= 0:
        syncs = commits / writes
    return Traits(
        seconds=seconds,
        operations=ops,
        read_fraction=reads / ops if ops else 0.0,
        mean_read_bytes=nread / reads if reads else None,
        mean_write_bytes=nwritten / writes if writes else None,
        syncs_per_write=syncs,
    )
