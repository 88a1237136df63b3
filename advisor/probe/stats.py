"""What /metrics says about probes, read from the store once per scrape (exporters/probes.py).

Runs by outcome are counts of finished runs in the store, so they only grow while the
database is kept (a counter); the last results are the latest completed run per pool,
workload and parameter (advisor/probe/evidence.py): its best candidate (most IOPS, as
ranked there) and its baseline. The budget used is what `ProbeService` accounts against
`[profiler] daily_seconds` / `daily_bytes`: probe time and bytes in the last 24 hours. Each
pool's latest `probe --efficiency` report is read on the same pass (exporters/efficiency.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from advisor.config.settings import ProfilerSettings
from advisor.evidence.efficiency import PoolEfficiency
from advisor.probe.efficiency_stored import efficiency_of
from advisor.probe.evidence import evidence
from advisor.probe.plan import DAY_SECONDS
from advisor.store.probes import ProbeStore


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
    unreadable: str | None = None  # why the store could not be read: nothing above is known


def probe_stats(store: ProbeStore, profiler: ProfilerSettings, now: float | None = None) -> ProbeStats:
    now = time.time() if now is None else now
    measured = []
    for pool, workload in store.pool_workloads():
        for ev in evidence(store, pool, workload):
            if not ev.candidates:  # every run of it set aside: nothing measured to show
                continue
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
                      budgets=budgets, queued=store.queue_length(), efficiency=efficiency_of(store))
