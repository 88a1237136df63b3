"""The probe service the CLI and the API call: plan, run (with progress), list, get, recover,
evidence.  One object wires the store, the command runner and the host file view."""
from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from advisor.config.settings import CacheMethod
from advisor.engine.loader import RuleBook
from advisor.engine.schema import Workload
from advisor.engine.service import TargetError, resolve_params
from advisor.engine.units import format_size
from advisor.evidence.arc_cap import ARC_SHARE, arc_limits, stored_bytes
from advisor.evidence.parameters import ParameterEvidence
from advisor.host.cpustat import CpuTimes, cpu_share, read_cpu_times
from advisor.host.files import HostFiles
from advisor.host.kstat import read_named_kstat
from advisor.host.parsing import ParseError
from advisor.host.runner import CommandRunner
from advisor.hostmodel.names import SCRATCH_DATASET, check_pool_name
from advisor.probe.candidates import Candidate, make_candidate, nearest_first, recordsize_grid
from advisor.probe.fio_job import FioJob, Hygiene, JobError, build_job
from advisor.probe.foreground import foreground_rate, foreground_watch
from advisor.probe.plan_runner import ARCSTATS, PlanRunner, ProbeAborted, ProbeFailed, ProgressCallback
from advisor.probe.pooldesc import PoolUnavailable, read_pool_descriptor
from advisor.probe.probe_plan import Budget, Plan, estimate_seconds, fit_runtime
from advisor.probe.safety import ProbeLock, Thresholds, UnsafeToProbe, check_pool
from advisor.probe.scratch import ScratchArea, ScratchError
from advisor.probe.temporary_modparams import ModuleParamError, ModuleParams, ParamGuard, restore_leftovers
from advisor.store.db import connect
from advisor.store.probe_evidence import evidence
from advisor.store.probes import DAY_SECONDS, ProbeStore, RunRow, RunStatus

log = logging.getLogger("advisor.probe")
QUOTA_HEADROOM = 4  # quota >= 4 x the working set
EFFICIENCY_STREAMS = 4  # an efficiency run writes this many files at once, then reads them back as one
# Module parameters an efficiency run changed are saved under this run id (runs count from 1):
# recovery after a crash puts them back like a probe's.
EFFICIENCY_RUN_ID = 0


EfficiencyTests = Literal["all", "sequential", "random"]
EFFICIENCY_TESTS: tuple[EfficiencyTests, ...] = get_args(EfficiencyTests)
# A budget's share per timed fio run: sequential has three (raw read, write, read) and room for
# laying out; random eight (raw 4K and recordsize, reads and sync writes at three levels) and
# room for the layout and the async writes, which write an amount rather than for a time.
EFFICIENCY_RUNS: dict[EfficiencyTests, int] = {"sequential": 4, "random": 10, "all": 14}


def efficiency_seconds(budget_seconds: float, tests: EfficiencyTests) -> int:
    """Seconds of each timed fio run of an efficiency run of `tests` within `budget_seconds`."""
    return int(budget_seconds // EFFICIENCY_RUNS[tests]) or 2


def _recordsize_candidates(wl: Workload, params: dict[str, str]) -> list[Candidate]:
    """The recordsizes around the workload's page (or block) size, nearest first; 128K the baseline."""
    block = wl.io.block_size
    page = params.get("page_size") or (wl.parameters["page_size"].default if "page_size" in wl.parameters else None)
    grid = nearest_first(recordsize_grid(page or block), page or block)
    return [make_candidate("recordsize", v, baseline=(v == "128K")) for v in grid]


class PlanError(ValueError):
    """The probe cannot be planned as asked (unknown workload, budget too small); says why."""


@dataclass(frozen=True)
class ProbeConfig:
    state_dir: Path
    scratch_name: str = SCRATCH_DATASET
    repeats: int = 2
    ramp_seconds: int = 5
    longest_runtime_seconds: int = 30
    max_file_bytes: int = 256 << 20  # per fio job; the ARC cannot hold the data instead (below)
    # How the measured reads reach the disks, not the ARC (docs/probes.md, "The probe and the rest
    # of the host"): "uncached" (the default) keeps the scratch dataset's data out of the ARC
    # (primarycache=metadata), which evicts nothing of anyone else's; "arc-cap" lowers zfs_arc_max
    # for the whole host instead, as the shipped prior was measured, at the cost of every other
    # pool's cache; "cached" does neither (results may come from memory).
    cache: CacheMethod = "uncached"
    # How fast fio lays out files (compressible data, written once), for the plan's estimate;
    # an emulated lab VM manages ~10 MB/s, real disks far more.
    layout_bytes_per_second: float = 50e6
    layout_per_repeat: bool = True  # when the budget has room for it (plan.Plan.layout_per_repeat)
    thresholds: Thresholds = field(default_factory=Thresholds)


class ProbeService:
    def __init__(self, config: ProbeConfig, rulebook: RuleBook, runner: CommandRunner | None = None,
                 files: HostFiles | None = None):
        self.config = config
        self.rulebook = rulebook
        self.runner = runner or CommandRunner(30.0)
        self.files = files or HostFiles("/")
        self.store = ProbeStore(connect(config.state_dir))

    # --- plan -----------------------------------------------------------------------------
    def plan(self, pool: str, workload: str, budget: Budget = Budget(), role: str | None = None,
             candidates: list[Candidate] | None = None, params: dict[str, str] | None = None) -> Plan:
        check_pool_name(pool)
        wl = self.rulebook.workloads.get(workload)
        if wl is None:
            raise PlanError(f"unknown workload {workload!r}; valid: {sorted(self.rulebook.workloads)}")
        params = params or {}
        try:  # declared parameters with declared values only: they are formatted into the fio job
            resolve_params(wl, {**params, **({"role": role} if role else {})})
        except TargetError as exc:
            raise PlanError(f"{exc.reason}; valid: {exc.valid}") from None
        if candidates is None:
            candidates = _recordsize_candidates(wl, params)
        if not any(c.baseline for c in candidates):
            raise PlanError("a plan needs a baseline candidate (the value the others are compared with)")
        candidates = sorted(candidates, key=lambda c: not c.baseline)  # baseline first
        job, max_file = self._job_in_quota(wl, budget, role, params)
        working_set = job.working_set_bytes
        quota = budget.space_bytes
        stored = stored_bytes(working_set, job.compress_percentage)
        capped = self.config.cache == "arc-cap"
        arc_floor, arc_cap = self._arc_limits(stored) if capped else (None, None)
        notes = []
        if arc_cap and stored < ARC_SHARE * arc_cap:
            notes.append(f"working set {format_size(working_set)} ({format_size(stored)} as the compressed ARC "
                         f"stores {job.compress_percentage} % compressible data) is less than {ARC_SHARE} x the "
                         f"ARC cap {format_size(arc_cap)}: up to {min(1.0, arc_cap / stored):.0%} of it may be "
                         f"read from memory (see arc_hit_ratio)")
        layout_cache, measure_cache = self._scratch_primarycache(wl.io.pattern)
        if measure_cache == "all":
            notes.append("sequential reads are measured with primarycache=all (under metadata the prefetcher's "
                         "reads are dropped before use, openzfs/zfs#9375): what a repeat reads twice may come "
                         "from memory (see arc_hit_ratio)")
        elif self.config.cache == "cached":
            notes.append("the ARC is neither capped nor kept from the scratch dataset: results may come from memory")
        per_repeat = self.config.layout_per_repeat
        chosen, dropped, runtime = self._fit(budget, candidates, working_set, per_repeat)
        if per_repeat:
            shared = self._fit(budget, candidates, working_set, False)
            if shared[2] is not None and len(shared[0]) > len(chosen):
                chosen, dropped, runtime = shared
                per_repeat = False
                notes.append("the budget has no room for a fresh layout per repeat: each candidate's repeats share "
                             "one, and the dispersion leaves out how much layouts differ")
        if runtime is None:
            raise PlanError(f"a budget of {budget.seconds:g} s is too small for {self.config.repeats} repeats of "
                            f"two candidates with a {format_size(working_set)} working set")
        return Plan(pool=pool, workload=workload, role=role, params=params, candidates=chosen,
                    repeats=self.config.repeats, runtime_seconds=runtime, ramp_seconds=self.config.ramp_seconds,
                    max_file_bytes=max_file, working_set_bytes=working_set, quota_bytes=quota,
                    arc_max_bytes=arc_cap, arc_min_bytes=arc_floor, layout_per_repeat=per_repeat,
                    layout_primarycache=layout_cache, measure_primarycache=measure_cache,
                    budget=budget,
                    estimated_seconds=estimate_seconds(len(chosen), self.config.repeats, runtime,
                                                       self.config.ramp_seconds, working_set,
                                                       self.config.layout_bytes_per_second, per_repeat),
                    dropped=dropped, notes=notes)

    def _job_in_quota(self, wl: Workload, budget: Budget, role: str | None,
                      params: dict[str, str]) -> tuple[FioJob, int]:
        """The probe's fio job, and the largest file it writes, within the space budget."""
        max_file = self.config.max_file_bytes
        try:
            job = build_job(wl, "/probe", Hygiene(max_file_bytes=max_file), role, params)
        except JobError as exc:
            raise PlanError(str(exc)) from None
        # The quota is the space budget, and files are kept to a quarter of it: writes into a
        # dataset near its quota are throttled (ZFS reserves worst-case space for dirty data),
        # measured in the lab: 8K random writes with a quota of 1.6 x the working set gave
        # 1,131 and 766 IOPS where the same job without a quota gave 1,513 and 1,504.
        if job.working_set_bytes > budget.space_bytes // QUOTA_HEADROOM:
            max_file = max(16 << 20, max_file * budget.space_bytes // QUOTA_HEADROOM // job.working_set_bytes)
            job = build_job(wl, "/probe", Hygiene(max_file_bytes=max_file), role, params)
        return job, max_file

    def _fit(self, budget: Budget, candidates: list[Candidate], working_set: int,
             per_repeat: bool) -> tuple[list[Candidate], list[Candidate], int | None]:
        """(chosen, dropped, fio runtime): the most candidates, in order, whose repeats fit the
        budget; runtime None when not even two do."""
        chosen, dropped = list(candidates), list[Candidate]()
        while len(chosen) >= 2:
            runtime = fit_runtime(budget.seconds, len(chosen), self.config.repeats, self.config.ramp_seconds,
                                  working_set, self.config.longest_runtime_seconds,
                                  self.config.layout_bytes_per_second, per_repeat)
            if runtime is not None:
                return chosen, dropped, runtime
            dropped.insert(0, chosen.pop())
        return chosen, dropped, None

    def _scratch_primarycache(self, pattern: str) -> tuple[str | None, str | None]:
        """(primarycache while laying out, while measuring); None: the candidate's own.

        Uncached, the files are laid out under "metadata", so that what was just written is not
        read back from memory, and random I/O is measured under "metadata" too. Sequential reads
        are measured under "all": under "metadata" the prefetcher's reads are dropped before
        use and the disks read several times what the reader gets (docs/probes.md)."""
        if self.config.cache != "uncached":
            return None, None
        return "metadata", ("metadata" if pattern == "random" else "all")

    def _arc_limits(self, stored: int) -> tuple[int | None, int | None]:
        """(zfs_arc_min to set while probing, or None; zfs_arc_max to set, or None when the
        ARC's limits cannot be read): a quarter of the working set as the ARC stores it
        (advisor/evidence/arc_cap.py)."""
        try:
            c_min = int(read_named_kstat(self.files, ARCSTATS).values["c_min"])
        except (OSError, ValueError, KeyError):
            return None, None
        return arc_limits(stored, c_min)

    # --- run ------------------------------------------------------------------------------
    async def run(self, plan: Plan, progress: ProgressCallback | None = None, queued_id: int | None = None) -> RunRow:
        """`queued_id`: a run queued by POST /v1/probes, started (claimed) once the checks pass;
        a refused check (UnsafeToProbe, LockBusy) leaves it queued."""
        workload = self.rulebook.workloads[plan.workload]
        scratch = ScratchArea(plan.pool, self.runner, self.config.scratch_name)
        with ProbeLock(self.config.state_dir, plan.pool):
            await self._recover_locked(plan.pool)
            try:
                pool, descriptor = await read_pool_descriptor(plan.pool, self.runner, self.files)
            except PoolUnavailable as exc:
                raise UnsafeToProbe(str(exc)) from None
            size, free = await self._space(plan.pool)
            check_pool(pool, size, free, plan.working_set_bytes * 5 // 4 + (64 << 20), self.config.thresholds)
            self._check_daily(plan)
            await self._check_idle(plan.pool, scratch.root, plan.changes_host)
            candidates = [c.model_dump() for c in plan.candidates]
            if queued_id is None:
                run_id = self.store.start_run(plan.pool, plan.workload, plan.role, plan.budget.model_dump(),
                                              candidates, descriptor)
            elif self.store.claim_run(queued_id, plan.budget.model_dump(), candidates, descriptor):
                run_id = queued_id
            else:
                raise UnsafeToProbe(f"run {queued_id} is no longer queued")
            guard = ParamGuard(ModuleParams(self.files), self.store, run_id)
            workdir = self.config.state_dir / "probe-work"
            workdir.mkdir(parents=True, exist_ok=True)
            status: RunStatus = "failed"
            reason: str | None = None
            stopped: float | None = None
            try:
                await PlanRunner(plan, workload, run_id, self.store, self.runner, self.files, scratch, guard,
                                 self.config.thresholds, workdir, descriptor, progress).run()
                status = "completed"
            except ProbeAborted as exc:
                status, reason, stopped = "aborted", str(exc), exc.at
            except (ProbeFailed, ScratchError, ModuleParamError, JobError) as exc:
                reason = str(exc)
            except asyncio.CancelledError:
                status, reason, stopped = "aborted", "cancelled", time.time()
                raise
            finally:
                problems = guard.restore()
                try:
                    await scratch.remove_all()
                except ScratchError as exc:
                    problems.append(str(exc))
                if problems:
                    reason = "; ".join(filter(None, [reason, "clean-up: " + "; ".join(problems)]))
                self.store.end_run(run_id, status, reason, stopped)
            ended = self.store.run(run_id)
            if ended is None:  # never: the run's row was written above
                raise ProbeFailed(f"run {run_id} is missing from the store")
            return ended

    async def efficiency(self, pool: str, seconds: int = 10, file_bytes: int = 256 << 20,
                         tests: EfficiencyTests = "all") -> dict[str, object]:
        """Raw-disk baselines (read-only) and the pool's large sequential throughput and small
        random IOPS (`tests`: "sequential", "random" or "all") against its layout."""
        from advisor.probe.efficiency_run import EfficiencyReport, measure
        from advisor.probe.random_run import measure_random

        check_pool_name(pool)
        if tests not in EFFICIENCY_TESTS:
            raise PlanError(f"efficiency tests {tests!r}: choose one of {', '.join(EFFICIENCY_TESTS)}")
        scratch = ScratchArea(pool, self.runner, self.config.scratch_name)
        with ProbeLock(self.config.state_dir, pool):
            await self._recover_locked(pool)
            try:
                pool_facts, descriptor = await read_pool_descriptor(pool, self.runner, self.files)
            except PoolUnavailable as exc:
                raise UnsafeToProbe(str(exc)) from None
            size, free = await self._space(pool)
            check_pool(pool_facts, size, free, 8 * file_bytes, self.config.thresholds)
            capped = self.config.cache == "arc-cap"
            await self._check_idle(pool, scratch.root, host_wide=capped)
            workdir = self.config.state_dir / "probe-work"
            workdir.mkdir(parents=True, exist_ok=True)
            # Capped as a probe's: a quarter of what is read (compression off: stored as written).
            arc_floor, arc_cap = self._arc_limits(EFFICIENCY_STREAMS * file_bytes) if capped else (None, None)
            guard = ParamGuard(ModuleParams(self.files), self.store, EFFICIENCY_RUN_ID)

            def cap_arc() -> int | None:  # before the reads only: the ARC bounds a txg's dirty data
                guard.cap_arc(arc_floor, arc_cap)
                return arc_cap

            try:
                if tests in ("all", "sequential"):
                    report = await measure(pool, descriptor, self.runner, self.files, scratch,
                                           self.config.thresholds, workdir, seconds, file_bytes, EFFICIENCY_STREAMS,
                                           cap_arc=cap_arc if capped else None)
                else:
                    report = EfficiencyReport(pool=descriptor, raw_read_bytes_per_second={}, results=[], disks={},
                                              tests=[])
                if tests in ("all", "random"):
                    # one file of this size, read and overwritten in place: primarycache=metadata
                    # keeps its data out of the ARC, the ARC's size does not matter
                    part = await measure_random(pool, descriptor, self.runner, self.files, scratch,
                                                self.config.thresholds, workdir, seconds, file_bytes)
                    report.raw_random_iops, report.raw_random_disks = part.raw_random_iops, part.raw_random_disks
                    report.random_results, report.tests = part.random_results, [*report.tests, "random"]
            finally:
                problems = guard.restore()
                await scratch.remove_all()
            if problems:
                raise ModuleParamError("; ".join(problems))
            data = report.model_dump()
            self.store.add_efficiency(pool, data)
            return data

    async def _space(self, pool: str) -> tuple[int | None, int | None]:
        out = await self.runner.run(["zpool", "list", "-Hp", "-o", "size,free", pool])
        try:
            size, free = out.stdout.split()
            return int(size), int(free)
        except ValueError:
            return None, None

    def _check_daily(self, plan: Plan) -> None:
        seconds, written = self.store.usage_since(plan.pool, time.time() - DAY_SECONDS)
        if seconds + plan.estimated_seconds > plan.budget.daily_seconds:
            raise UnsafeToProbe(f"daily budget: {seconds:.0f} s of probing on {plan.pool} in the last 24 h; "
                                f"{plan.estimated_seconds:.0f} s more would exceed {plan.budget.daily_seconds:g} s", "budget")
        if written > plan.budget.daily_bytes:
            raise UnsafeToProbe(f"daily budget: probes wrote {written >> 20} MiB to {plan.pool} in the last 24 h, "
                                f"more than {plan.budget.daily_bytes >> 20} MiB", "budget")

    async def _check_idle(self, pool: str, scratch_root: str, host_wide: bool = False) -> None:
        t = self.config.thresholds
        watch = foreground_watch(self.files, pool, scratch_root, host_wide)
        before, _ = await asyncio.to_thread(watch.counters)
        cpu_before = self._cpu_times()
        await asyncio.sleep(t.idle_window_seconds)
        after, _ = await asyncio.to_thread(watch.counters)
        cpu_after = self._cpu_times()
        # the pool's own foreground I/O first: it is the more specific reason (a writer busies the CPU too)
        ops, nbytes = foreground_rate(before, after)
        if ops > t.idle_max_ops_per_second or nbytes > t.idle_max_bytes_per_second:
            where = "the host's pools are" if host_wide else f"pool {pool} is"
            raise UnsafeToProbe(f"{where} not idle: {ops:.0f} ops/s, {nbytes / 1024:.0f} KiB/s of foreground "
                                f"I/O over {t.idle_window_seconds:g} s (thresholds {t.idle_max_ops_per_second:g} ops/s, "
                                f"{t.idle_max_bytes_per_second / 1024:.0f} KiB/s)", "busy")
        share = cpu_share(cpu_before, cpu_after) if cpu_before and cpu_after else None
        if share is not None and share.busy >= t.idle_max_cpu_busy:
            stolen = f", {share.steal:.0%} stolen by the hypervisor" if share.steal else ""
            raise UnsafeToProbe(f"the host's CPU is busy: {share.busy:.0%} of {share.cpus} CPUs' time over "
                                f"{t.idle_window_seconds:g} s{stolen} (threshold {t.idle_max_cpu_busy:.0%}); a probe "
                                "now would measure the CPU left over, not the storage", "cpu")

    def _cpu_times(self) -> CpuTimes | None:
        """/proc/stat's CPU ticks, or None when it cannot be read (the gate is then not applied)."""
        try:
            return read_cpu_times(self.files)
        except (OSError, ParseError):
            return None

    # --- recovery -------------------------------------------------------------------------
    async def recover(self, pools: list[str] | None = None) -> dict[str, object]:
        """At start-up: scratch datasets and module parameters left by a crashed run are removed
        and restored; runs left 'running' are marked failed."""
        if pools is None:
            out = await self.runner.run(["zpool", "list", "-H", "-o", "name"])
            pools = out.stdout.split() if out.ok else []
        by_pool: dict[str, object] = {}
        for pool in pools:
            with ProbeLock(self.config.state_dir, pool):
                by_pool[pool] = await self._recover_locked(pool)
        return {"pools": by_pool}

    async def _recover_locked(self, pool: str) -> dict[str, object]:
        """Holding the pool's lock (and the module parameter lock): nothing else is probing."""
        restored = restore_leftovers(ModuleParams(self.files), self.store)
        scratch = ScratchArea(pool, self.runner, self.config.scratch_name)
        removed = False
        for attempt in range(5):  # a just-killed fio may hold the mount a moment
            try:
                removed = await scratch.remove_all()
                break
            except ScratchError:
                if attempt == 4:
                    raise
                await asyncio.sleep(1.0)
        for run in self.store.running():
            if run.pool == pool and run.pid != os.getpid():
                self.store.end_run(run.id, "failed", "interrupted: found unfinished at the next start")
        if removed or restored:
            log.warning("probe recovery on %s: scratch removed=%s, module parameters restored=%s", pool, removed, restored)
        return {"scratch_removed": removed, "module_params_restored": restored}

    # --- reading --------------------------------------------------------------------------
    def runs(self, pool: str | None = None, workload: str | None = None, limit: int = 100) -> list[RunRow]:
        return self.store.runs(pool, workload, limit)

    def get(self, run_id: int) -> RunRow | None:
        return self.store.run(run_id)

    def evidence(self, pool: str, workload: str) -> list[ParameterEvidence]:
        return evidence(self.store, pool, workload)


def parse_budget(text: str) -> float:
    """'5m', '90s', '1h', '300' -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    text = text.strip().lower()
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise PlanError(f"budget {text!r}: expected e.g. 90s, 5m, 1h") from None


__all__ = ["ProbeConfig", "ProbeService", "PlanError", "parse_budget", "Budget"]
