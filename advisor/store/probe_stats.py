"""What /metrics says about probes, read from the store once per scrape (exporters/probes.py).

Runs by outcome are counts of finished runs in the store, so they only grow while the
database is kept (a counter); the last results are the latest completed run per pool,
workload and parameter (advisor/store/probe_evidence.py): its best candidate (most IOPS, as
ranked there) and its baseline. The budget used is what `ProbeService` accounts against
`[profiler] daily_seconds` / `daily_bytes`: probe time and bytes in the last 24 hours. Each
pool's latest `probe --efficiency` report is read on the same pass (exporters/efficiency.py).

For a fleet to learn from (docs/fleet.md), the same latest runs are also given whole: every
repeat of every candidate of a dataset property, the working set and ARC cap the run is
described by, and the shape of the pool it measured (`exported_runs`).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from advisor.evidence.arc_cap import described_arc_max
from advisor.evidence.efficiency import PoolEfficiency
from advisor.evidence.pool_shape import pool_shape
from advisor.store.efficiency_reports import efficiency_of
from advisor.store.probe_evidence import evidence
from advisor.store.probes import DAY_SECONDS, ProbeStore, ResultRow

# The repeats of a candidate exported at most (the plan runs 2 or 3): bounds the series per run.
MAX_EXPORTED_REPEATS = 5


class DailyBudget(Protocol):
    """What the budgets are measured against: the `[profiler]` settings (advisor/config/settings.py)."""

    @property
    def pools(self) -> Sequence[str]: ...
    @property
    def daily_seconds(self) -> float: ...
    @property
    def daily_bytes(self) -> int: ...


@dataclass(frozen=True)
class MeasuredCandidate:
    pool: str
    workload: str
    parameter: str
    value: str
    candidate: str  # "best" or "baseline"
    iops: float
    write_p99_seconds: float | None
    run_id: int


@dataclass(frozen=True)
class ExportedRepeat:
    value: str
    repeat: int
    iops: float
    bandwidth: float  # bytes/s read + written
    write_p99_seconds: float | None


@dataclass(frozen=True)
class ExportedRun:
    """The latest run of a dataset property on a pool for a workload, whole: what a sibling pool's
    model reads back (advisor/fleet/)."""
    pool: str
    workload: str
    parameter: str
    run_id: int
    working_set_bytes: int | None
    arc_max_bytes: int | None
    shape: dict  # media, vdev_type, top_vdevs, vdev_width, ashift (advisor/evidence/pool_shape.py)
    disks: list[str]  # the data disks' names, for their model (the exporter reads it from the host)
    repeats: list[ExportedRepeat]


def exported_run(pool: str, workload: str, parameter: str, rows: list[ResultRow]) -> ExportedRun | None:
    """The run's rows as exported, or None when it measured a module parameter (the fleet's model
    describes a candidate by its dataset properties alone)."""
    rows = [r for r in rows if r.scope == "dataset" and r.repeat <= MAX_EXPORTED_REPEATS]
    if not rows:
        return None
    first = rows[0]
    disks = [d for v in first.pool.get("vdevs") or [] for d in v.get("disks") or [] if d]
    return ExportedRun(pool, workload, parameter, first.run_id, first.working_set_bytes, described_arc_max(first),
                       pool_shape(first.pool), disks,
                       [ExportedRepeat(r.value, r.repeat, r.iops, r.read_bw + r.write_bw, r.write_p99) for r in rows])


@dataclass(frozen=True)
class PoolBudget:
    pool: str
    used_seconds: float
    used_bytes: int
    limit_seconds: float
    limit_bytes: int


@dataclass(frozen=True)
class ProbeStats:
    runs: list[tuple[str, str, str, int]] = field(default_factory=list)  # pool, workload, outcome, count
    last_run: list[tuple[str, str, float]] = field(default_factory=list)  # pool, workload, ended at
    measured: list[MeasuredCandidate] = field(default_factory=list)
    budgets: list[PoolBudget] = field(default_factory=list)
    queued: int = 0
    efficiency: list[PoolEfficiency] = field(default_factory=list)  # each pool's latest report
    exported_runs: list[ExportedRun] = field(default_factory=list)
    unreadable: str | None = None  # why the store could not be read: nothing above is known


def probe_stats(store: ProbeStore, profiler: DailyBudget, now: float | None = None) -> ProbeStats:
    now = time.time() if now is None else now
    measured, exported = [], []
    for pool, workload in store.pool_workloads():
        rows = store.results_for(pool, workload)
        for ev in evidence(store, pool, workload):
            if not ev.candidates:  # every run of it set aside: nothing measured to show
                continue
            run = exported_run(pool, workload, ev.parameter,
                               [r for r in rows if r.run_id == ev.run_id and r.parameter == ev.parameter])
            exported += [run] if run is not None else []
            picks = [("best", ev.candidates[0])]
            base = next((c for c in ev.candidates if c.baseline), None)
            if base is not None:
                picks.append(("baseline", base))
            measured += [MeasuredCandidate(pool, workload, ev.parameter, c.value, role, c.iops, c.write_p99_seconds,
                                           ev.run_id) for role, c in picks]
    pools = sorted({*profiler.pools, *(p for p, _, _ in store.last_finished())})
    budgets = []
    for pool in pools:
        seconds, written = store.usage_since(pool, now - DAY_SECONDS)
        budgets.append(PoolBudget(pool, seconds, written, profiler.daily_seconds, profiler.daily_bytes))
    return ProbeStats(runs=store.outcome_counts(), last_run=store.last_finished(), measured=measured,
                      budgets=budgets, queued=store.queue_length(), efficiency=efficiency_of(store),
                      exported_runs=exported)
