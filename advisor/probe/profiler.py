"""The background profiler: one pass over queued runs, then the configured pools x workloads.

Run by `zfs-advisor profile` (the privileged zfs-advisor-probe.service, started by its timer
and when POST /v1/probes queues a run; docs/architecture.md, "Who probes"). A pass:

1. runs queued by POST /v1/probes, oldest first. A pool that is busy, locked or out of daily
   budget leaves its run queued for the next pass (the reason is recorded); one queued longer
   than `queued_max_age_seconds`, or one that cannot be planned, fails saying why;
2. when `[profiler] enabled`, every configured pool x workload: the candidates come from
   `choose_candidates(plan, history)` (the seam where expected-improvement selection plugs in;
   the default measures what this pool has not measured yet for the workload).

Every probe goes through `ProbeService.run`: healthy pool, free space, the daily budget
accounted from the store over the last 24 h, an idle window of `idle_window_seconds` (no
foreground I/O, and the host's CPU less busy than `idle_max_cpu_busy`), one probe per pool (the
flock), abort on foreground I/O. At most one probe per pool per pass.
Skips are stored (`profiler_skips`) with their kind and reason.
"""
from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Literal

from advisor.config.settings import ProfilerSettings
from advisor.evidence.parameters import ParameterEvidence
from advisor.host.runner import CommandRunner
from advisor.host.zfs_props import dataset_recordsize
from advisor.hostmodel.names import InvalidName
from advisor.probe.candidates import Candidate, CandidateError, parse_candidate_spec
from advisor.probe.probe_plan import Budget, Plan
from advisor.probe.probe_service import PlanError, ProbeConfig, ProbeService
from advisor.probe.safety import LockBusy, UnsafeToProbe
from advisor.store.probe_evidence import evidence
from advisor.store.probes import RunRow

log = logging.getLogger("advisor.probe.profiler")

# a chooser may be a coroutine function (the model's reads the pool's layout first)
CandidateChooser = Callable[[Plan, list[ParameterEvidence]], list[Candidate] | Awaitable[list[Candidate]]]


def choose_candidates(plan: Plan, history: list[ParameterEvidence]) -> list[Candidate]:
    """Which of the plan's candidates (and those its budget dropped) to measure in this pass.

    `history`: what completed probes of this pool and workload measured (latest run per
    parameter, advisor/evidence/parameters.py). Default: the candidates not measured yet, with
    their parameter's baseline (effects are ratios within one run); [] when every candidate
    has been measured. Another chooser (expected improvement from a model) has this signature.
    """
    measured = {(e.parameter, c.value) for e in history for c in e.candidates}
    everything = [*plan.candidates, *plan.dropped]
    new = [c for c in everything if not c.baseline and (c.parameter, c.value) not in measured]
    if not new:
        return []
    wanted = {c.parameter for c in new}
    return [c for c in everything if c.baseline and c.parameter in wanted] + new


async def dataset_reference(runner: CommandRunner, named: dict[str, str], pool: str, workload: str) -> str | None:
    """The recordsize (bytes) of the datasets `[workloads]` (`named`: dataset -> workload) names for
    the workload on `pool`, when they agree: a run measured from it serves them all (the model's
    chooser makes it the run's baseline). None otherwise, or when none can be read: the run then
    measures from the default."""
    datasets = [d for d, w in named.items() if w == workload and d.partition("/")[0] == pool]
    sizes = {size for d in datasets if (size := await dataset_recordsize(runner, d)) is not None}
    if datasets and not sizes:
        log.warning("the recordsize of %s could not be read; %s is measured from the default",
                    ", ".join(datasets), workload)
    return str(sizes.pop()) if len(sizes) == 1 else None


def profiler_config(settings: ProfilerSettings, base: ProbeConfig) -> ProbeConfig:
    """The probe configuration the profiler runs with: its idle window, thresholds and file sizes."""
    thresholds = replace(base.thresholds, idle_window_seconds=settings.idle_window_seconds,
                         idle_max_ops_per_second=settings.idle_max_ops_per_second,
                         idle_max_bytes_per_second=settings.idle_max_bytes_per_second,
                         idle_max_cpu_busy=settings.idle_max_cpu_busy)
    return replace(base, thresholds=thresholds, max_file_bytes=settings.max_file_bytes,
                   ramp_seconds=settings.ramp_seconds, layout_bytes_per_second=settings.layout_bytes_per_second,
                   cache=settings.cache)


@dataclass(frozen=True)
class Outcome:
    """What a pass did for one queued run or one pool x workload."""

    pool: str
    workload: str | None
    action: Literal["ran", "skipped", "failed"]
    run_id: int | None = None
    status: str | None = None  # the run's status when it ran
    kind: str | None = None  # why it was skipped or failed: busy, cpu, budget, locked, unsafe, measured, plan, expired
    reason: str | None = None


class Profiler:
    def __init__(self, service: ProbeService, settings: ProfilerSettings, choose: CandidateChooser = choose_candidates,
                 clock: Callable[[], float] = time.time):
        self.service, self.settings, self.choose, self.clock = service, settings, choose, clock
        self.store = service.store

    def budget(self, seconds: float | None = None, space_bytes: int | None = None) -> Budget:
        extra = {"space_bytes": space_bytes} if space_bytes else {}
        return Budget(seconds=seconds or self.settings.probe_seconds, daily_seconds=self.settings.daily_seconds,
                      daily_bytes=self.settings.daily_bytes, **extra)

    async def run_once(self) -> list[Outcome]:
        outcomes: list[Outcome] = []
        probed: set[str] = set()  # at most one probe per pool per pass
        await self._queue(outcomes, probed, set())
        if self.settings.enabled:
            for pool in self.settings.pools:
                for workload in self.settings.workloads:
                    if pool in probed:
                        break
                    outcome = await self._background(pool, workload)
                    outcomes.append(outcome)
                    if outcome.action == "ran":
                        probed.add(pool)
        return outcomes

    async def _queue(self, outcomes: list[Outcome], probed: set[str], seen: set[int]) -> None:
        """Queued runs oldest first, and those queued meanwhile (a POST during a pass starts no
        second pass: systemd merges it into the one running)."""
        while todo := [q for q in self.store.queued() if q.id not in seen and q.pool not in probed]:
            for queued in todo:
                seen.add(queued.id)
                if queued.pool in probed:
                    continue
                outcome = await self._queued(queued)
                outcomes.append(outcome)
                if outcome.action == "ran":
                    probed.add(queued.pool)

    # --- queued by POST /v1/probes --------------------------------------------------------
    async def _queued(self, run: RunRow) -> Outcome:
        request = run.request or {}
        if self.clock() - (run.queued_at or run.started_at) > self.settings.queued_max_age_seconds:
            reason = (f"not started within {self.settings.queued_max_age_seconds:g} s of being queued; "
                      f"last skip: {self._last_skip(run.id) or 'none recorded'}")
            return self._refuse(run, "expired", reason)
        try:
            candidates = [c for parameter, values in (request.get("params") or {}).items()
                          for c in parse_candidate_spec(f"{parameter}={','.join(values)}")] or None
            asked = request.get("budget") or {}
            seconds = asked.get("seconds")  # what the API allowed, checked again: the database is not trusted
            budget = self.budget(min(float(seconds), self.settings.max_request_seconds) if seconds else None,
                                 asked.get("space_bytes"))
            plan = self.service.plan(run.pool, run.workload, budget, run.role, candidates, request.get("set") or {})
        except (PlanError, CandidateError, InvalidName, ValueError) as exc:
            return self._refuse(run, "plan", str(exc))
        return await self._run(plan, run.id)

    def _refuse(self, run: RunRow, kind: str, reason: str) -> Outcome:
        self.store.refuse_run(run.id, f"{kind}: {reason}")
        self.store.note_skip(run.pool, run.workload, run.id, kind, reason)
        log.warning("queued probe run %d failed (%s): %s", run.id, kind, reason)
        return Outcome(run.pool, run.workload, "failed", run.id, "failed", kind, reason)

    def _last_skip(self, run_id: int) -> str | None:
        return next((s.reason for s in self.store.skips(limit=1000) if s.run_id == run_id), None)

    # --- configured pools x workloads -----------------------------------------------------
    async def _background(self, pool: str, workload: str) -> Outcome:
        try:
            full = self.service.plan(pool, workload, self.budget())
            history = evidence(self.store, pool, workload)
            chosen = self.choose(full, history)
            if inspect.isawaitable(chosen):
                chosen = await chosen
            if not chosen:
                return Outcome(pool, workload, "skipped", kind="measured",
                               reason="every candidate of the plan has been measured on this pool")
            plan = self.service.plan(pool, workload, self.budget(), candidates=chosen)
        except (PlanError, CandidateError, InvalidName, ValueError) as exc:
            self.store.note_skip(pool, workload, None, "plan", str(exc))
            return Outcome(pool, workload, "skipped", kind="plan", reason=str(exc))
        return await self._run(plan, None)

    # --- both -----------------------------------------------------------------------------
    async def _run(self, plan: Plan, queued_id: int | None) -> Outcome:
        try:
            run = await self.service.run(plan, None, queued_id)
        except UnsafeToProbe as exc:
            return self._skip(plan, queued_id, exc.kind, str(exc))
        except LockBusy as exc:
            return self._skip(plan, queued_id, "locked", str(exc))
        log.info("probe run %d on %s for %s: %s%s", run.id, run.pool, run.workload, run.status,
                 f" ({run.reason})" if run.reason else "")
        return Outcome(plan.pool, plan.workload, "ran", run.id, run.status, reason=run.reason)

    def _skip(self, plan: Plan, queued_id: int | None, kind: str, reason: str) -> Outcome:
        self.store.note_skip(plan.pool, plan.workload, queued_id, kind, reason)
        log.info("profiler skipped %s for %s (%s): %s", plan.pool, plan.workload, kind, reason)
        return Outcome(plan.pool, plan.workload, "skipped", queued_id, "queued" if queued_id else None, kind, reason)


