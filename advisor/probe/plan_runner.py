"""Run a plan: a scratch child per repeat (or per candidate), layout, fio under a watch, results stored.

Everything the run changes is undone in `finally` blocks (module parameters restored,
scratch datasets destroyed), and saved to the store before it is changed, so a killed
process is cleaned up by `ProbeService.recover` at the next start.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.engine.schema import Workload
from advisor.evidence.bound import judge
from advisor.host.files import HostFiles
from advisor.host.kstat import read_named_kstat
from advisor.host.runner import CommandRunner
from advisor.probe.candidates import Candidate
from advisor.probe.fio_job import FioJob, Hygiene, build_job
from advisor.probe.fio_result import FioMetrics, FioParseError, parse_fio_json
from advisor.probe.foreground import ForegroundWatch, HostForegroundWatch, foreground_watch
from advisor.probe.probe_plan import Plan
from advisor.probe.run_counters import io_window, pool_disks, run_load, sample_load
from advisor.probe.safety import Thresholds
from advisor.probe.scratch import ScratchArea
from advisor.probe.temporary_modparams import ParamGuard
from advisor.store.probes import ProbeStore, ResultRow

log = logging.getLogger(__name__)
ARCSTATS = "/proc/spl/kstat/zfs/arcstats"
# fio dies with the process that started it (an abort, or a SIGKILL of the advisor),
# instead of writing on in a scratch dataset that recovery wants to destroy.
FIO_ARGV = ("setpriv", "--pdeathsig", "KILL", "--", "fio")


class ProbeAborted(Exception):
    """Stopped on purpose: foreground I/O, a budget; `.at` is when fio was gone (epoch seconds)."""

    def __init__(self, reason: str, at: float | None = None):
        super().__init__(reason)
        self.at = at if at is not None else time.time()


class ProbeFailed(Exception):
    """fio or zfs failed; the message says how."""


@dataclass
class Progress:
    event: str  # "candidate", "layout", "repeat", "result"
    candidate: Candidate
    index: int  # candidate number, from 1
    total: int
    repeat: int = 0
    metrics: FioMetrics | None = None
    elapsed_seconds: float = 0.0
    bound: str | None = None  # "result": what set the repeat's pace (advisor/evidence/bound.py)


ProgressCallback = Callable[[Progress], None]


def arc_hit_counters(files: HostFiles) -> tuple[int, int] | None:
    try:
        values = read_named_kstat(files, ARCSTATS).values
        return int(values["demand_data_hits"]), int(values["demand_data_misses"])
    except (OSError, ValueError, KeyError):
        return None


async def commit_pool(runner: CommandRunner, pool: str) -> None:
    """`zpool sync`: what was just written leaves memory before the next measurement."""
    synced = await runner.run(["zpool", "sync", pool], 300.0)
    if not synced.ok:
        raise ProbeFailed(synced.error())


def arc_hit_ratio(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """Share of the demand data reads between two `arc_hit_counters` the ARC served."""
    if not before or not after:
        return None
    hits, misses = after[0] - before[0], after[1] - before[1]
    return hits / (hits + misses) if hits + misses > 0 else None


@dataclass
class PlanRunner:
    plan: Plan
    workload: Workload
    run_id: int
    store: ProbeStore
    runner: CommandRunner
    files: HostFiles
    scratch: ScratchArea
    guard: ParamGuard
    thresholds: Thresholds
    workdir: Path
    pool_descriptor: dict[str, Any]
    progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        self.started = time.monotonic()
        self.deadline = self.started + self.plan.budget.seconds
        self.written = 0
        self.watch = foreground_watch(self.files, self.plan.pool, self.scratch.root, self.plan.changes_host)

    def _emit(self, event: str, cand: Candidate, index: int, repeat: int = 0, metrics: FioMetrics | None = None,
              bound: str | None = None) -> None:
        if self.progress:
            self.progress(Progress(event, cand, index, len(self.plan.candidates), repeat, metrics,
                                   time.monotonic() - self.started, bound))

    async def run(self) -> None:
        self.guard.cap_arc(self.plan.arc_min_bytes, self.plan.arc_max_bytes)
        for index, cand in enumerate(self.plan.candidates, 1):
            await self._candidate(index, cand)

    async def _candidate(self, index: int, cand: Candidate) -> None:
        self._emit("candidate", cand, index)
        try:
            for name, value in cand.module_parameters().items():
                self.guard.set(name, value)
            if self.plan.layout_per_repeat:
                # Each repeat on files of its own, in a dataset of its own: where blocks land and
                # what the ARC kept from the last run differ from one layout to the next, and the
                # dispersion is only honest when the repeats sample that too.
                for repeat in range(1, self.plan.repeats + 1):
                    async with self._laid_out(index, cand) as (dataset, job, jobfile, layout_bytes):
                        await self._repeat(index, cand, dataset, job, jobfile, repeat, layout_bytes)
            else:
                async with self._laid_out(index, cand) as (dataset, job, jobfile, layout_bytes):
                    for repeat in range(1, self.plan.repeats + 1):
                        await self._repeat(index, cand, dataset, job, jobfile, repeat,
                                           layout_bytes if repeat == 1 else 0)
        finally:
            problems = self.guard.restore(list(cand.module_parameters()))
            if problems:
                raise ProbeFailed("; ".join(problems))

    @contextlib.asynccontextmanager
    async def _laid_out(self, index: int, cand: Candidate) -> AsyncIterator[tuple[str, FioJob, Path, int]]:
        """A fresh scratch child with the candidate's properties and the job's files written
        and committed -> (dataset, job, job file, bytes the layout wrote); destroyed after."""
        if time.monotonic() + self.plan.runtime_seconds + self.plan.ramp_seconds > self.deadline:
            raise ProbeAborted(f"time budget of {self.plan.budget.seconds:g} s spent before laying out {cand.key}")
        properties = cand.dataset_properties()
        if self.plan.layout_primarycache and cand.parameter != "primarycache":
            properties["primarycache"] = self.plan.layout_primarycache
        dataset, mountpoint = await self.scratch.create_child(cand.key, properties, self.plan.quota_bytes)
        try:
            hygiene = Hygiene(runtime_seconds=self.plan.runtime_seconds, ramp_seconds=self.plan.ramp_seconds,
                              max_file_bytes=self.plan.max_file_bytes)
            job = build_job(self.workload, mountpoint, hygiene, self.plan.role, self.plan.params)
            jobfile = self.workdir / f"run{self.run_id}-{cand.key}.fio"
            jobfile.write_text(job.text, encoding="utf-8")
            layout = jobfile.with_name(jobfile.stem + "-layout.fio")
            layout.write_text(job.layout_text, encoding="utf-8")
            self._emit("layout", cand, index)
            async with self._writes_counted_if_cut_short() as written_before:
                await self._fio(layout)
                # The layout's writes are still dirty in memory: commit them, or the first repeat
                # measures their txg sync as well as its own I/O.
                await commit_pool(self.runner, self.plan.pool)
            layout_bytes = await self._written_since(written_before)
            self._count_written(layout_bytes)
            measured_cache = self._measure_primarycache(cand)
            if measured_cache and measured_cache != properties["primarycache"]:
                await self.scratch.set_property(dataset, "primarycache", measured_cache)
            yield dataset, job, jobfile, layout_bytes
        finally:
            await self.scratch.destroy(dataset)

    def _measure_primarycache(self, cand: Candidate) -> str | None:
        """The primarycache the plan measures `cand` under, if the plan sets one (a candidate
        that is itself about primarycache keeps its own value)."""
        return None if cand.parameter == "primarycache" else self.plan.measure_primarycache

    async def _written_since(self, before: int) -> int:
        return max(0, await asyncio.to_thread(self.watch.scratch_written) - before)

    def _record_written(self, nbytes: int) -> None:
        """The run's total so far goes to the store at once: the daily budget counts it whatever
        happens next, an abort or a kill included."""
        self.written += nbytes
        self.store.set_run_written(self.run_id, self.written)

    @contextlib.asynccontextmanager
    async def _writes_counted_if_cut_short(self) -> AsyncIterator[int]:
        """-> the scratch datasets' written bytes before a layout or repeat.  If the step is cut
        short (abort, kill, failure), what it wrote is counted here: no result carries it, but
        the pool took the writes all the same.  A failure to read the counters then must not
        hide why the step stopped."""
        before = await asyncio.to_thread(self.watch.scratch_written)
        try:
            yield before
        except BaseException:
            with contextlib.suppress(Exception):
                self._record_written(await self._written_since(before))
            raise

    def _count_written(self, nbytes: int) -> None:
        """Layouts and measured runs alike count against the run's byte budget."""
        self._record_written(nbytes)
        if self.written > self.plan.budget.bytes:
            raise ProbeAborted(f"byte budget: probes wrote {self.written >> 20} MiB, "
                               f"more than {self.plan.budget.bytes >> 20} MiB")

    async def _repeat(self, index: int, cand: Candidate, dataset: str, job: FioJob, jobfile: Path, repeat: int,
                      layout_bytes: int) -> None:
        if time.monotonic() + job.seconds > self.deadline:
            raise ProbeAborted(f"time budget of {self.plan.budget.seconds:g} s spent before {cand.key} repeat {repeat}")
        disks = pool_disks(self.pool_descriptor)
        async with self._writes_counted_if_cut_short() as written_before:
            arc_before = arc_hit_counters(self.files)
            load_before = await asyncio.to_thread(sample_load, self.files, disks)
            started = time.time()
            output = await self._fio(jobfile)
        load_after = await asyncio.to_thread(sample_load, self.files, disks)
        try:
            metrics = parse_fio_json(output)
        except FioParseError as exc:
            raise ProbeFailed(str(exc)) from None
        written = await self._written_since(written_before)
        hit_ratio = arc_hit_ratio(arc_before, arc_hit_counters(self.files))
        window = io_window(load_after.at - load_before.at, metrics.runtime_seconds, job.ramp_seconds)
        load = run_load(load_before, load_after, window, metrics.cpu_cores)
        judged = judge(load)
        if judged.verdict == "cpu":
            log.warning("probe run %d, %s repeat %d set aside as evidence: %s", self.run_id, cand.key, repeat,
                        judged.reason)
        self.store.add_result(ResultRow(
            run_id=self.run_id, parameter=cand.parameter, value=cand.value, scope=cand.scope, baseline=cand.baseline,
            repeat=repeat, started_at=started, iops=metrics.iops, read_iops=metrics.read.iops,
            write_iops=metrics.write.iops, read_bw=metrics.read.bandwidth_bytes_per_second,
            write_bw=metrics.write.bandwidth_bytes_per_second,
            read_p50=metrics.read.latency.p50_seconds, read_p99=metrics.read.latency.p99_seconds,
            read_p999=metrics.read.latency.p999_seconds, write_p50=metrics.write.latency.p50_seconds,
            write_p99=metrics.write.latency.p99_seconds, write_p999=metrics.write.latency.p999_seconds,
            sync_p99=metrics.sync_latency.p99_seconds, cpu_user=metrics.cpu_user_ratio,
            cpu_system=metrics.cpu_system_ratio, runtime_seconds=metrics.runtime_seconds, written_bytes=written,
            layout_written_bytes=layout_bytes,
            compress_percentage=job.compress_percentage, compress_ratio=await self.scratch.compress_ratio(dataset),
            working_set_bytes=job.working_set_bytes, arc_max_bytes=self.plan.arc_max_bytes, arc_hit_ratio=hit_ratio,
            scratch_primarycache=self._measure_primarycache(cand),
            pool=self.pool_descriptor, job=job.text, fio_version=metrics.fio_version,
            bound=judged.verdict, bound_reason=judged.reason, load=load.model_dump()))
        self._emit("result", cand, index, repeat, metrics, judged.verdict)
        self._count_written(written)

    async def _fio(self, jobfile: Path) -> str:
        return await run_watched_fio(self.runner, jobfile, self.watch, self.thresholds, self.deadline,
                                     self.plan.pool, self.plan.budget.seconds)


async def run_watched_fio(runner: CommandRunner, jobfile: Path, watch: ForegroundWatch | HostForegroundWatch,
                          t: Thresholds, deadline: float, pool: str, budget_seconds: float) -> str:
    """Run fio on `jobfile` while watching for foreground I/O; kill it within one poll when
    some appears or the deadline (time.monotonic()) passes.  -> fio's JSON output."""
    output = jobfile.with_suffix(".json")
    output.unlink(missing_ok=True)
    argv = [*FIO_ARGV, "--output-format=json", f"--output={output}", str(jobfile)]
    timeout = max(1.0, deadline - time.monotonic()) + 30.0
    task = asyncio.ensure_future(runner.run(argv, timeout))
    await asyncio.to_thread(watch.refresh)  # off the loop: thousands of files on a big host
    reason = None
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=t.abort_poll_seconds)
            seen = await asyncio.to_thread(watch.poll)
            # The thresholds are amounts in one poll interval: compared as rates, so that a
            # dataset read less often than every poll (a big host) is held to the same limit.
            if (seen.ops_per_second * t.abort_poll_seconds >= t.abort_min_ops
                    or seen.bytes_per_second * t.abort_poll_seconds >= t.abort_min_bytes):
                where = "the host's pools" if isinstance(watch, HostForegroundWatch) else f"pool {pool}"
                reason = (f"foreground I/O on {where}: {seen.ops_per_second:.0f} operations/s, "
                          f"{seen.bytes_per_second / 1024:.0f} KiB/s outside the scratch datasets "
                          f"(in {', '.join(seen.busiest)})")
                break
            if time.monotonic() > deadline:
                reason = f"time budget of {budget_seconds:g} s spent"
                break
    finally:
        if not task.done():
            task.cancel()  # CommandRunner kills fio (SIGKILL) and reaps it
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if reason:
        raise ProbeAborted(reason, at=time.time())
    result = task.result()
    if not result.ok:
        raise ProbeFailed(f"fio: {result.error()}")
    try:
        return output.read_text(encoding="utf-8", errors="replace")
    finally:
        output.unlink(missing_ok=True)
