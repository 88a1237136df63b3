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

b is the busiest member disk's share of the window with I/O in flight (io_ticks, field 13 of
/proc/diskstats, the kernel's Documentation/admin-guide/iostats.rst), the figure a probe run is
judged by (advisor/evidence/bound.py): a pool is storage-bound at DISKS_BUSY.  It is the pool's,
not one dataset's: other datasets' I/O counts in it too.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from advisor.evidence.bound import DISKS_BUSY, busiest_disk

PoolVerdict = Literal["storage-bound", "not storage-bound", "unknown"]
AMDAHL = ("Amdahl, G. M. (1967), Validity of the single processor approach to achieving large scale computing "
          "capabilities, AFIPS Spring Joint Computer Conference: https://doi.org/10.1145/1465482.1465560")


class PoolBusy(BaseModel):
    """A pool's member disks over the daemon's window (shares 0..1, rounded to a hundredth)."""
    pool: str
    window_seconds: float
    disks_busy: dict[str, float]  # each member disk's share of the window with I/O in flight
    cpu_busy: float | None = None  # the host's CPU: None, the collection does not read /proc/stat

    @property
    def busiest(self) -> tuple[str, float] | None:
        return busiest_disk(self.disks_busy)

    @property
    def mean(self) -> float | None:
        return sum(self.disks_busy.values()) / len(self.disks_busy) if self.disks_busy else None

    @property
    def verdict(self) -> PoolVerdict:
        busiest = self.busiest
        if busiest is None:
            return "unknown"
        return "storage-bound" if busiest[1] >= DISKS_BUSY else "not storage-bound"

    @property
    def text(self) -> str:
        """'storage-bound', 'not storage-bound (disks idle 57 %)' or 'unknown (no window yet)'."""
        busiest = self.busiest
        if busiest is None:
            return "unknown (no window yet)"
        if self.verdict == "storage-bound":
            return "storage-bound"
        return f"not storage-bound (disks idle {1 - busiest[1]:.0%})"


def pool_busy(pool: str, disks_busy: dict[str, float], window_seconds: float) -> PoolBusy:
    return PoolBusy(pool=pool, window_seconds=round(window_seconds),
                    disks_busy={d: round(min(1.0, max(0.0, b)), 2) for d, b in disks_busy.items()})


def amdahl_bound(gain: float, busy: float) -> float:
    """The most the application's metric moves when the storage gets `gain` (> 1) times faster and
    the disks were busy `busy` of its time."""
    return 1.0 / ((1.0 - busy) + busy / gain)


def _window_text(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds >= 120 else f"{seconds:.0f} s"


def bound_text(busy: PoolBusy, ratio: float) -> str:
    """'the pool's disks were busy 42% of the last 5 minutes (not storage-bound): a storage change
    moves this workload by at most x1.25 (Amdahl's bound, ...)'."""
    busiest = busy.busiest
    share = busiest[1] if busiest else 0.0
    return (f"the pool's disks were busy {share:.0%} of the last {_window_text(busy.window_seconds)} "
            f"({busy.verdict}): a storage change moves this workload by at most x{ratio:.2f} (Amdahl's bound, "
            "assuming its time is the disks' busy time plus other work)")
