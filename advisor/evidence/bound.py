"""What set a probe run's pace: the pool's disks (`storage`), the host's CPU (`cpu`), or neither
clearly (`unclear`), judged from what the host's counters said over the run (advisor/probe/run_counters.py
reads them), and which runs are therefore set aside as evidence about the storage.

A probe compares settings by what fio measured.  When something else on the host held the CPU
while fio ran, fio measured the CPU left over, not the storage: in the lab a probe beside a busy
neighbour measured 128K at 895 IOPS and 8K at 436, the reverse of the same probe on the idle
host (8K 1,846, 128K 694).  Such a run is no evidence about a setting of the storage.

The rule, per fio run (one repeat of one candidate):

* `cpu`: the host's CPU was busy at least CPU_SATURATED of the time, at least CONTENDED of it
  was others' work (stolen by a hypervisor, or programs other than fio and ZFS's kernel
  threads), and the pool's busiest disk had idle time (busy under DISKS_BUSY of the window);
* `storage`: the busiest disk was busy at least DISKS_BUSY of the window and the CPU was not
  saturated;
* `unclear`: anything else, or a counter could not be read.

A run whose CPU the probe itself saturated (compression, checksums, many small records) is not
`cpu`: that CPU cost is part of what the setting does on this host, and it is kept.  Only a `cpu`
run is set aside; `unclear` runs are kept, as every run was before runs were judged (a probe of
sync writes with one I/O in flight leaves the disks idle between writes, and is still a
measurement of the storage).

Thresholds, and why:

* DISKS_BUSY 0.80: the share of the window the disk had I/O in flight (io_ticks, field 13 of
  /proc/diskstats, the kernel's Documentation/admin-guide/iostats.rst; iostat(1)'s %util).
  iostat(1): "Device saturation occurs when this value is close to 100% for devices serving
  requests serially. But for devices serving requests in parallel, such as RAID arrays and modern
  SSDs, this number does not reflect their performance limits."  So a busy disk is a sign, not a
  proof, that it set the pace; a disk idle a fifth of the time or more did not, alone.
* CPU_SATURATED 0.90: the host's CPUs busy (proc(5), /proc/stat: all but idle and iowait; steal
  included) nine tenths of the time leave fio's threads and ZFS's taskqs waiting for a CPU;
  the USE method reads utilisation near 100 % as saturation
  (https://www.brendangregg.com/usemethod.html).
* CONTENDED 0.25: a quarter of every CPU's time spent on others' work (steal: a hypervisor ran
  another guest, proc(5); or programs other than the probe) is more than scheduling noise on a
  host running only the probe.

None of the three is calibrated in the lab yet (docs/probes.md, "Not yet").
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

Verdict = Literal["storage", "cpu", "unclear"]

DISKS_BUSY = 0.80
CPU_SATURATED = 0.90
CONTENDED = 0.25


def busiest_disk(disks_busy: dict[str, float]) -> tuple[str, float] | None:
    """(disk, share) of the busiest disk (the last name of a tie); None without disks."""
    if not disks_busy:
        return None
    return max(disks_busy.items(), key=lambda kv: (kv[1], kv[0]))


class RunLoad(BaseModel):
    """The host over one fio run, from /proc."""
    seconds: float  # the window: fio's runtime and ramp, or the wall time between the readings
    cpus: int | None = None
    cpu_busy_ratio: float | None = None  # of every CPU's time, steal included
    cpu_steal_ratio: float | None = None
    fio_cores: float | None = None  # CPUs' worth fio used (its own report)
    zfs_thread_cores: float | None = None  # CPUs' worth ZFS's kernel threads used (None: not read)
    others_ratio: float | None = None  # of every CPU's time: busy, but neither steal nor the probe's
    disks_busy: dict[str, float] = {}  # the pool's disks: share of the window with I/O in flight (io_ticks)
    # the same disks' summed I/O time over the window (field 11 of /proc/diskstats), not capped: an
    # upper end of the busy share where io_ticks under-counts overlapping I/O (docs/apps.md)
    disks_in_flight: dict[str, float] = {}

    @property
    def busiest_disk(self) -> tuple[str, float] | None:
        return busiest_disk(self.disks_busy)

    @property
    def contention(self) -> float | None:
        """Share of the host's CPU time others had: steal plus other programs."""
        if self.cpu_steal_ratio is None or self.others_ratio is None:
            return None
        return self.cpu_steal_ratio + self.others_ratio


class Judged(BaseModel):
    verdict: Verdict
    reason: str


def judge(load: RunLoad) -> Judged:
    busiest, busy, contention = load.busiest_disk, load.cpu_busy_ratio, load.contention
    if busiest is None or busy is None or contention is None:
        missing = "the pool's disks' counters" if busiest is None else "the host's CPU counters"
        return Judged(verdict="unclear", reason=f"not judged: {missing} could not be read over the run")
    disk, disk_busy = busiest
    cpu = _cpu_text(load)
    disks = f"the busiest disk, {disk}, was busy {disk_busy:.0%} of the {load.seconds:.0f} s"
    in_flight = load.disks_in_flight.get(disk)
    if disk_busy < DISKS_BUSY and in_flight is not None and in_flight >= DISKS_BUSY:
        # said, not judged on: a CPU verdict stays on the lower end, the side that keeps no bad evidence
        disks += (f" by io_ticks, with I/O in flight up to {min(in_flight, 1.0):.0%} of it by the summed I/O time "
                  "(io_ticks counts less where I/Os overlap)")
    saturated, disks_busy = busy >= CPU_SATURATED, disk_busy >= DISKS_BUSY
    if saturated and contention >= CONTENDED and not disks_busy:
        return Judged(verdict="cpu", reason=f"the host's CPU set the pace, not the storage: {cpu}, while {disks}")
    if disks_busy and not saturated:
        return Judged(verdict="storage", reason=f"the storage set the pace: {disks}, the {cpu}")
    if saturated and disks_busy:
        why = "the disks and the CPU were both near saturation"
    elif saturated:
        why = "the probe itself (fio and ZFS's threads) kept the CPU busy: a cost of the setting on this host"
    else:
        why = "neither the disks nor the CPU were saturated (latency, one I/O in flight, or the ARC set the pace)"
    return Judged(verdict="unclear", reason=f"{why}: {cpu}, {disks}")


def _cpu_text(load: RunLoad) -> str:
    parts = [f"{load.cpu_steal_ratio:.0%} stolen by the hypervisor" if load.cpu_steal_ratio else "",
             f"{load.others_ratio:.0%} other programs' work" if load.others_ratio else ""]
    detail = "; ".join(p for p in parts if p)
    return f"CPU {load.cpu_busy_ratio:.0%} busy" + (f" ({detail})" if detail else "")


# --- which runs count as evidence -------------------------------------------------------------

class JudgedRow(Protocol):
    """One repeat as the store keeps it (advisor/store/probes.py ResultRow)."""

    @property
    def run_id(self) -> int: ...
    @property
    def parameter(self) -> str: ...
    @property
    def bound(self) -> Verdict | None: ...
    @property
    def bound_reason(self) -> str | None: ...


class SetAside(BaseModel):
    """A run's measurement of a parameter that is not used as evidence, and why."""
    run_id: int
    parameter: str
    repeats: int  # of its repeats, how many the CPU bound
    reason: str  # the first such repeat's


R = TypeVar("R", bound=JudgedRow)


def storage_rows(rows: Sequence[R]) -> tuple[list[R], list[SetAside]]:
    """(the rows that are evidence about the storage, the runs set aside), in the rows' order.

    A run's candidates are compared with one another (effects are ratios within one run), so one
    CPU-bound repeat sets aside the whole run's measurement of that parameter: its other repeats
    compare with a repeat whose pace the storage did not set.  Rows stored before runs were
    judged (`bound` None) are kept."""
    aside: dict[tuple[int, str], SetAside] = {}
    for row in rows:
        if row.bound == "cpu":
            key = (row.run_id, row.parameter)
            if key in aside:
                aside[key].repeats += 1
            else:
                aside[key] = SetAside(run_id=row.run_id, parameter=row.parameter, repeats=1,
                                      reason=row.bound_reason or "the host's CPU set the pace, not the storage")
    return [r for r in rows if (r.run_id, r.parameter) not in aside], list(aside.values())


class RunBound(BaseModel):
    """What set a whole run's pace, from its repeats' verdicts: `cpu` when any repeat was CPU-bound
    (its parameters in `set_aside`), `storage` when every repeat was storage-bound, `unclear`
    otherwise; None when no repeat was judged (stored before runs were judged, or none yet)."""
    verdict: Verdict | None
    repeats: dict[str, int]  # verdict ("not judged" for None) -> repeats
    set_aside: list[SetAside]


def run_bound(rows: Sequence[JudgedRow]) -> RunBound:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.bound or "not judged"] = counts.get(row.bound or "not judged", 0) + 1
    _, aside = storage_rows(rows)
    verdict: Verdict | None
    if aside:
        verdict = "cpu"
    elif not rows or set(counts) == {"not judged"}:
        verdict = None
    else:
        verdict = "storage" if set(counts) == {"storage"} else "unclear"
    return RunBound(verdict=verdict, repeats=counts, set_aside=aside)
