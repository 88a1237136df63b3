"""Measure a pool's small random I/O: the member disks' random read IOPS, all at once and
read-only, then 4K random reads, sync writes and async writes in a scratch dataset at rising
concurrency, with the disks' counters and each ZFS kernel thread's CPU alongside
(advisor/probe/random_efficiency.py says what is expected and how it is judged).

Runs inside `ProbeService.efficiency`, under its lock, checks and scratch area."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from advisor.host.disks import DISKSTATS, parse_diskstats
from advisor.host.files import HostFiles
from advisor.host.modparams import read_module_params
from advisor.host.runner import CommandRunner
from advisor.host.threads import clock_ticks, read_thread_ticks, thread_cpu
from advisor.host.txgs import read_txgs
from advisor.host.zfs_props import dataset_recordsize
from advisor.probe.efficiency_run import cpu_times
from advisor.probe.fio_result import load_fio_json, parse_fio_json
from advisor.probe.foreground import foreground_watch
from advisor.probe.plan_runner import ProbeFailed, commit_pool, run_watched_fio
from advisor.probe.pool_efficiency import (
    disk_busy,
    expected_bandwidth,
    layout_rule,
    raw_read_argv,
    raw_read_rates,
    txgs_during,
)
from advisor.probe.random_efficiency import (
    BLOCK,
    LEVELS,
    RAW_QUEUE_DEPTH,
    Kind,
    RandomEfficiency,
    RandomLevel,
    best_level,
    diagnose_random,
    direction_of,
    random_job,
    random_test_name,
    raw_queue_depth,
)
from advisor.probe.safety import Thresholds
from advisor.probe.scratch import ScratchArea

# recordsize = the block size, so a 4K write is a whole record (no read-modify-write of a larger
# one); primarycache=metadata, so a read reaches the disks (the block pointers stay cached)
RANDOM_PROPERTIES = {"recordsize": "4K", "compression": "off", "primarycache": "metadata", "atime": "off"}
DEFAULT_RECORDSIZE = 128 << 10


class RandomPart(BaseModel):
    raw_random_iops: dict[str, dict[str, float]]  # block ("4k", "128k") -> disk -> IOPS
    raw_random_disks: dict[str, dict[str, dict[str, float]]]  # block -> disk -> counters meanwhile
    random_results: list[RandomEfficiency]


def size_label(block: int) -> str:
    return f"{block // 1024}k" if block % 1024 == 0 else str(block)


async def pool_recordsize(runner: CommandRunner, pool: str) -> int:
    return await dataset_recordsize(runner, pool) or DEFAULT_RECORDSIZE


async def raw_random(runner: CommandRunner, files: HostFiles, members: list[str], block: int,
                     seconds: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Each member disk's random read IOPS at `block`, all at once, read-only; and the disks'
    counters meanwhile (no sector written: the proof it wrote nothing)."""
    devices = [f"/dev/{m}" for m in members]
    argv = raw_read_argv(devices, seconds, size_label(block), "randread", RAW_QUEUE_DEPTH)
    stats0, t0 = parse_diskstats(files.read_text(DISKSTATS)), time.monotonic()
    result = await runner.run(argv, seconds + 60)
    stats1, elapsed = parse_diskstats(files.read_text(DISKSTATS)), time.monotonic() - t0
    if not result.ok:
        raise ProbeFailed(f"raw random read of {', '.join(members)}: {result.error()}")
    try:
        fio_json = load_fio_json(result.stdout)
        iops = raw_read_rates(fio_json, devices, "iops")
    except ValueError as exc:  # FioParseError included
        raise ProbeFailed(f"raw random read of {', '.join(members)}: {exc}") from None
    runtime = max((float(j.get("job_runtime", 0)) / 1000 for j in fio_json.get("jobs") or []), default=0.0)
    window = runtime if 0 < runtime <= elapsed else elapsed
    return {m: iops[d] for m, d in zip(members, devices, strict=True)}, disk_busy(stats0, stats1, members, window)


async def measure_random(pool_name: str, descriptor: dict[str, Any], runner: CommandRunner, files: HostFiles,
                         scratch: ScratchArea, thresholds: Thresholds, workdir: Path, seconds: int = 5,
                         file_bytes: int = 64 << 20, deadline: float | None = None) -> RandomPart:
    deadline = deadline or time.monotonic() + 900
    members = [d["name"] for d in descriptor["disks"]]
    raw_iops, raw_disks = {}, {}
    for block in sorted({BLOCK, await pool_recordsize(runner, pool_name)}):
        raw_iops[size_label(block)], raw_disks[size_label(block)] = await raw_random(runner, files, members, block,
                                                                                     seconds)
    params = read_module_params(files)
    watch = foreground_watch(files, pool_name, scratch.root, host_wide=False)
    dataset, mountpoint = await scratch.create_child("random", RANDOM_PROPERTIES, 4 * file_bytes + (256 << 20))
    levels: dict[Kind, list[RandomLevel]] = {}
    try:
        jobfile = workdir / "random-layout.fio"
        jobfile.write_text(random_job(mountpoint, "layout", file_bytes, 1, seconds), encoding="utf-8")
        await run_watched_fio(runner, jobfile, watch, thresholds, deadline, pool_name, 900)
        await commit_pool(runner, pool_name)
        for kind in ("read", "sync", "async"):
            for jobs in LEVELS:
                jobfile = workdir / f"random-{kind}-{jobs}.fio"
                jobfile.write_text(random_job(mountpoint, kind, file_bytes, jobs, seconds,
                                              write_bytes=file_bytes // 4), encoding="utf-8")
                levels.setdefault(kind, []).append(
                    await _level(runner, files, jobfile, watch, thresholds, deadline, pool_name, members, jobs,
                                 kind != "read"))
                if kind != "read":
                    await commit_pool(runner, pool_name)
    finally:
        await scratch.destroy(dataset)
    raw_depth = raw_queue_depth(raw_disks[size_label(BLOCK)])
    results = []
    for kind, measured in levels.items():
        direction = direction_of(kind)
        expected = expected_bandwidth(descriptor, raw_iops[size_label(BLOCK)], direction, "random")
        best = best_level(measured)
        ratio = best.iops / expected if expected else 0.0
        results.append(RandomEfficiency(
            test=random_test_name(kind), direction=direction, sync=None if kind == "read" else kind == "sync",
            block_bytes=BLOCK, measured=best.iops, expected=expected, ratio=ratio,
            expectation=layout_rule(descriptor, direction, "random"), jobs=best.jobs, levels=measured,
            diagnosis=diagnose_random(kind, ratio, best, descriptor, params, raw_depth,
                                      raw_iops=raw_iops[size_label(BLOCK)])))
    return RandomPart(raw_random_iops=raw_iops, raw_random_disks=raw_disks, random_results=results)


def group_runtime_seconds(fio_json: dict[str, Any]) -> float:
    """The run's time as fio measured it: with group_reporting, a job's `job_runtime` adds up its
    threads' times (4 jobs of 2 s: 8,000 ms, fio 3.33), the read/write sections' `runtime` is
    the group's own (2,001 ms)."""
    return max((float((job.get(d) or {}).get("runtime", 0)) / 1000 for job in fio_json.get("jobs") or []
                for d in ("read", "write")), default=0.0)


async def _level(runner: CommandRunner, files: HostFiles, jobfile: Path, watch: Any, thresholds: Thresholds,
                 deadline: float, pool: str, members: list[str], jobs: int, writing: bool) -> RandomLevel:
    txgs0 = read_txgs(files, pool) if writing else []
    threads0, stats0, cpu0 = read_thread_ticks(files), parse_diskstats(files.read_text(DISKSTATS)), cpu_times(files)
    t0 = time.monotonic()
    output = await run_watched_fio(runner, jobfile, watch, thresholds, deadline, pool, 900)
    elapsed = time.monotonic() - t0
    threads1, stats1, cpu1 = read_thread_ticks(files), parse_diskstats(files.read_text(DISKSTATS)), cpu_times(files)
    txgs = txgs_during(txgs0, read_txgs(files, pool)) if writing else None
    metrics = parse_fio_json(output)
    # over fio's own runtime, as the sequential runs (efficiency_run.measure says why)
    runtime = group_runtime_seconds(load_fio_json(output))
    window = runtime if 0 < runtime <= elapsed else elapsed
    total = cpu1[0] - cpu0[0]
    return RandomLevel(jobs=jobs, iops=metrics.iops, seconds=window,
                       disks=disk_busy(stats0, stats1, members, window),
                       cpu_busy_ratio=1 - (cpu1[1] - cpu0[1]) / total if total > 0 else None,
                       threads=thread_cpu(threads0, threads1, window, clock_ticks()), txgs=txgs)
