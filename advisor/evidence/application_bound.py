"""How far a storage gain can reach the application: the pool's disks' busy share over the daemon's
window (advisor/recognise/disk_window.py keeps it), and the Amdahl bound it puts on a gain.

A probe's gain is a ratio of fio's IOPS.  The application gains only on the part of its time it
spends waiting on the disks: if the pool's disks were busy a share b of the window and a change
makes the storage g times faster, the application's metric moves by at most

    1 / ((1 - b) + b / g)

(Amdahl, G. M. (1967), "Validity of the single processor approach to achieving large scale
computing capabilities", AFIPS Spring Joint Computer Conference, pp. 483-485,
https://doi.org/10.1145/1465482.1465560).  It is an upper bound that assumes the application's time
is the disks' busy time plus other work that the change does not touch; what overlaps with the
disks' work (a database's CPU while its I/O is in flight) lowers the real effect further.

b, the share of the window a disk had I/O in flight, is known only between two ends, both from
/proc/diskstats (the kernel's Documentation/admin-guide/iostats.rst):

* the lower end, io_ticks (field 10 there, the 13th column): since Linux 5.0 ("block: delete
  part_round_stats and switch to less precise counting") it counts one jiffy at an I/O's start
  and the time since the last update at its end, so with several I/Os in flight it under-counts;
  under qemu's IOPS throttle the lab's pgbench disks completed their throttle's IOPS while it said
  37-64 % (docs/apps.md, "io_ticks under qemu's throttle");
* the upper end, the weighted time (field 11, the 14th column), capped at 1: the time each I/O was
  in flight, summed; busy time can never exceed it.  Field 11 rather than the sum of the per-op
  times (fields 4, 8, 15, 17) because every kernel has it, with that meaning: before 5.0 the
  in-flight count times the time between updates, since then each I/O's duration at its end (in
  the lab's 6.1 kernel it equals the sum of the four per-op times within 2 ms, each printed value
  rounded down, in all 1,226 device lines of the repository's recordings), where the per-op sum
  misses discards before 4.18 and flushes before 5.5.  An I/O is counted when it ends, so one that
  started before the window counts whole: hence the cap.

Amdahl's bound is taken at the upper end, so that "at most" holds whichever end is right.  The
verdict, at a probe run's threshold DISKS_BUSY (advisor/evidence/bound.py): storage-bound when the
lower end reaches it, not storage-bound when the upper end stays below it, undetermined between.
Both are the busiest member disk's; the pool's, not one dataset's: other datasets' I/O counts too.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from advisor.evidence.bound import DISKS_BUSY, busiest_disk

PoolVerdict = Literal["storage-bound", "not storage-bound", "undetermined", "unknown"]
AMDAHL = ("Amdahl, G. M. (1967), Validity of the single processor approach to achieving large scale computing "
          "capabilities, AFIPS Spring Joint Computer Conference: https://doi.org/10.1145/1465482.1465560")


class PoolBusy(BaseModel):
    """A pool's member disks over the daemon's window (shares 0..1, rounded to a hundredth)."""
    pool: str
    window_seconds: float
    disks_busy: dict[str, float]  # each member disk's io_ticks share: the lower end
    disks_in_flight: dict[str, float]  # each one's summed I/O time share, capped at 1: the upper end
    cpu_busy: float | None = None  # the host's CPU: None, the collection does not read /proc/stat

    @property
    def busiest(self) -> tuple[str, float] | None:
        """The busiest disk by the lower end."""
        return busiest_disk(self.disks_busy)

    @property
    def busiest_upper(self) -> tuple[str, float] | None:
        return busiest_disk(self.disks_in_flight)

    @property
    def mean(self) -> float | None:
        return sum(self.disks_busy.values()) / len(self.disks_busy) if self.disks_busy else None

    @property
    def verdict(self) -> PoolVerdict:
        lower, upper = self.busiest, self.busiest_upper
        if lower is None or upper is None:
            return "unknown"
        if lower[1] >= DISKS_BUSY:
            return "storage-bound"
        return "not storage-bound" if upper[1] < DISKS_BUSY else "undetermined"

    @property
    def busy_text(self) -> str:
        """'42%', or '42-100%' where the two ends differ."""
        lower, upper = self.busiest, self.busiest_upper
        low, high = (lower[1] if lower else 0.0), (upper[1] if upper else 0.0)
        return f"{low:.0%}" if round(low, 2) == round(high, 2) else f"{low * 100:.0f}-{high:.0%}"

    @property
    def text(self) -> str:
        """'storage-bound', 'not storage-bound (disks busy 15-27%)', 'undetermined (disks busy
        42-100%)' or 'unknown (no window yet)'."""
        if self.verdict == "unknown":
            return "unknown (no window yet)"
        return "storage-bound" if self.verdict == "storage-bound" else f"{self.verdict} (disks busy {self.busy_text})"


def _share(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 2)


def pool_busy(pool: str, disks_busy: dict[str, float], disks_in_flight: dict[str, float],
              window_seconds: float) -> PoolBusy:
    """Each disk's upper end is at least its lower end: both are rounded and the counters are read
    at slightly different moments."""
    return PoolBusy(pool=pool, window_seconds=round(window_seconds),
                    disks_busy={d: _share(b) for d, b in disks_busy.items()},
                    disks_in_flight={d: _share(max(disks_in_flight.get(d, 1.0), b)) for d, b in disks_busy.items()})


def amdahl_bound(gain: float, busy: float) -> float:
    """The most the application's metric moves when the storage gets `gain` (> 1) times faster and
    the disks were busy `busy` of its time."""
    return 1.0 / ((1.0 - busy) + busy / gain)


def _window_text(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds >= 120 and seconds % 60 == 0 else f"{seconds:.0f} s"


_PACE = {"storage-bound": "storage-bound",
         "not storage-bound": "not storage-bound",
         "undetermined": "undetermined: the disks may have set its pace, and the full gain may reach it"}


def bound_text(busy: PoolBusy, ratio: float) -> str:
    """'the pool's disks were busy 42-100% of the last 47 s (undetermined: ...): a storage change
    moves this workload by at most x1.89 (Amdahl's bound, ...)'."""
    return (f"the pool's disks were busy {busy.busy_text} of the last {_window_text(busy.window_seconds)} "
            f"({_PACE.get(busy.verdict, busy.verdict)}): a storage change moves this workload by at most "
            f"x{ratio:.2f} (Amdahl's bound at the upper end, assuming its time is the disks' busy time "
            "plus other work)")
