"""Measure a pool's efficiency: raw read rate of the member disks, all at once (read-only), then large
sequential writes and reads in a scratch dataset, with disk and CPU counters alongside.

Runs under the same lock, checks, scratch dataset and foreground watch as a probe.  Before the
reads, the caller's `cap_arc` caps the ARC as a probe does (a quarter of what is read), so that
they come from the disks; the writes run with the ARC as the host has it, since the ARC bounds
the dirty data a txg gathers (a 64 MiB cap made txgs of 32 MiB on the lab's stripe of four).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from advisor.host.cpustat import read_cpu_times
from advisor.host.disks import DISKSTATS, parse_diskstats
from advisor.host.files import HostFiles
from advisor.host.runner import CommandRunner
from advisor.host.threads import clock_ticks, read_thread_ticks, thread_cpu
from advisor.host.txgs import read_txgs
from advisor.probe.fio_result import load_fio_json, parse_fio_json
from advisor.probe.foreground import foreground_watch
from advisor.probe.plan_runner import ProbeFailed, commit_pool, run_watched_fio
from advisor.probe.pool_efficiency import (
    Efficiency,
    diagnose,
    disk_busy,
    expected_bandwidth,
    layout_rule,
    raw_read_argv,
    raw_read_rates,
    too_little_moved,
    txgs_during,
)
from advisor.probe.random_efficiency import RandomEfficiency
from advisor.probe.safety import Thresholds
from advisor.probe.scratch import ScratchArea

# Large records, no compression (random data would not compress anyway).  Written under
# primarycache=metadata, so the ARC keeps none of what was written (the file is read back
# from the disks); read under "all", the default, since prefetch is what keeps every disk busy
# behind one sequential reader.  Measured on the lab's stripe of four (docs/probes.md, "Pool
# efficiency"): read under primarycache=metadata, the reader got 6.3 MB/s while the disks read
# 31 (prefetched data dropped and read again; a slow sequential read under metadata with an
# empty cache: openzfs/zfs#9375); read under "all", 39.4 MB/s of the disks' 40.  On the
# raidz1 of four, a file laid out under "all" read at 27 MB/s with the disks reading 1.38
# bytes per byte; laid out under metadata, at 38.8 MB/s and 1.08.
EFFICIENCY_PROPERTIES = {"recordsize": "1M", "compression": "off", "primarycache": "metadata", "atime": "off"}
READ_CACHE = ("primarycache", "all")


class EfficiencyReport(BaseModel):
    """`results` are the large sequential tests, `random_results` the small random ones
    (random_run.py); each has `test`, `unit`, `measured`, `expected`, `ratio` and `diagnosis`."""
    pool: dict[str, Any]
    raw_read_bytes_per_second: dict[str, float]
    results: list[Efficiency]
    disks: dict[str, dict[str, dict[str, float]]]  # direction -> disk -> busy/bytes
    tests: list[str] = ["sequential"]  # which parts ran: "sequential", "random"
    raw_random_iops: dict[str, dict[str, float]] = {}  # block ("4k", "128k") -> disk -> read IOPS
    raw_random_disks: dict[str, dict[str, dict[str, float]]] = {}  # block -> disk -> counters meanwhile
    random_results: list[RandomEfficiency] = []
    arc_max_bytes: int | None = None  # the ARC cap while reading (None: not capped)
    note: str = ("a disk's write rate is assumed equal to its measured read rate: writing to a raw "
                 "device to measure it would destroy the pool")


def cpu_times(files: HostFiles) -> tuple[float, float]:
    """(all CPU ticks, idle ticks) from /proc/stat (advisor/host/cpustat.py: guest time counted once)."""
    times = read_cpu_times(files)
    return float(times.total), float(times.idle)


def efficiency_job(directory: str, rw: str, size: int, numjobs: int, seconds: int, create_only: bool = False,
                   one_pass: bool = False) -> str:
    """Writes: `numjobs` streams of `size` bytes each.  Reads: ONE stream over one file of
    numjobs x size, as a user's sequential read, the prefetcher keeping the disks busy (several
    streams thrashed the capped ARC: two readers got 12 MB/s while the disks read 42).
    `create_only`: lay the read's file out and stop, so that the measured read is only a read.
    `one_pass`: read the file once (at most `seconds`), not round again: with the ARC not capped
    a second pass would come from memory."""
    if rw == "read":
        size, numjobs = size * numjobs, 1
    lines = ["[global]", f"directory={directory}", "ioengine=psync", "bs=1M", f"size={size}",
             f"numjobs={numjobs}", "thread=1", "group_reporting=1", "fallocate=none", "refill_buffers=1",
             "buffer_compress_percentage=0", "end_fsync=1"]
    if rw == "read":
        lines += ["create_only=1"] if create_only else [*([] if one_pass else ["time_based=1"]), f"runtime={seconds}"]
    return "\n".join([*lines, "", f"[seq-{rw}]", f"rw={rw}", ""])


async def measure(pool_name: str, descriptor: dict[str, Any], runner: CommandRunner, files: HostFiles,
                  scratch: ScratchArea, thresholds: Thresholds, workdir: Path, seconds: int = 10,
                  file_bytes: int = 256 << 20, numjobs: int = 4, deadline: float | None = None,
                  cap_arc: Callable[[], int | None] | None = None) -> EfficiencyReport:
    """`cap_arc`: caps the ARC before the reads, and returns the cap (None: not capped); given,
    foreground I/O on any pool of the host stops the run, not only on this one."""
    deadline = deadline or time.monotonic() + 900
    members = [d["name"] for d in descriptor["disks"]]
    devices = [f"/dev/{m}" for m in members]
    result = await runner.run(raw_read_argv(devices, seconds), seconds + 60)
    if not result.ok:
        raise ProbeFailed(f"raw read of {', '.join(members)}: {result.error()}")
    try:
        rates = raw_read_rates(load_fio_json(result.stdout), devices)
    except ValueError as exc:  # FioParseError included
        raise ProbeFailed(f"raw read of {', '.join(members)}: {exc}") from None
    raw = {m: rates[d] for m, d in zip(members, devices, strict=True)}
    watch = foreground_watch(files, pool_name, scratch.root, host_wide=cap_arc is not None)
    dataset, mountpoint = await scratch.create_child("efficiency", EFFICIENCY_PROPERTIES,
                                                     numjobs * file_bytes * 2 + (256 << 20))
    results, disks, arc_max_bytes = [], {}, None
    try:
        for direction in ("write", "read"):
            jobfile = workdir / f"efficiency-{direction}.fio"
            if direction == "read":
                arc_max_bytes = cap_arc() if cap_arc else None
                jobfile.write_text(efficiency_job(mountpoint, direction, file_bytes, numjobs, seconds, True),
                                   encoding="utf-8")
                await run_watched_fio(runner, jobfile, watch, thresholds, deadline, pool_name, 900)
                await commit_pool(runner, pool_name)
                await scratch.set_property(dataset, *READ_CACHE)
            jobfile.write_text(efficiency_job(mountpoint, direction, file_bytes, numjobs, seconds,
                                              one_pass=cap_arc is None), encoding="utf-8")
            writing = direction == "write"
            txgs0 = read_txgs(files, pool_name) if writing else []
            threads0 = read_thread_ticks(files)
            stats0, cpu0, t0 = parse_diskstats(files.read_text(DISKSTATS)), cpu_times(files), time.monotonic()
            output = await run_watched_fio(runner, jobfile, watch, thresholds, deadline, pool_name, 900)
            elapsed = time.monotonic() - t0
            stats1, cpu1, threads1 = parse_diskstats(files.read_text(DISKSTATS)), cpu_times(files), read_thread_ticks(files)
            txgs = txgs_during(txgs0, read_txgs(files, pool_name)) if writing else None
            metrics = parse_fio_json(output)
            # Rates and busy time over fio's own runtime: the counters bracket the whole fio
            # process so that no I/O escapes them, but the process also starts and stops, and in
            # the lab's emulated VM the wall time was 1.37-1.44 x a 5 s run, which made the disks
            # look idle 30-50 % of the time they were asked to work (docs/probes.md).
            window = metrics.runtime_seconds if 0 < metrics.runtime_seconds <= elapsed else elapsed
            busy = disk_busy(stats0, stats1, members, window)
            threads = thread_cpu(threads0, threads1, window, clock_ticks())
            total = cpu1[0] - cpu0[0]
            cpu_busy = 1 - (cpu1[1] - cpu0[1]) / total if total > 0 else None
            asked = metrics.read.io_bytes if direction == "read" else metrics.write.io_bytes
            moved = "read_bytes" if direction == "read" else "written_bytes"
            at_disks = sum(d[moved] for d in busy.values())
            per_byte = at_disks / asked if asked else None
            measured = metrics.bandwidth_bytes_per_second
            pool_rate = at_disks / window if direction == "read" and window > 0 else measured
            expected = expected_bandwidth(descriptor, raw, direction)
            ratio = pool_rate / expected if expected else 0.0
            reader = measured / expected if expected else None
            synced = txgs.sync_bytes_per_second if txgs else None
            sync_ratio = synced / expected if synced is not None and expected else None
            short = too_little_moved(asked, window)
            diagnosis = [short] if short else diagnose(direction, ratio, descriptor, busy, cpu_busy, per_byte,
                                                        reader, txgs, window, sync_ratio, threads)
            results.append(Efficiency(test=f"seq-{direction}", direction=direction,
                                      measured_bytes_per_second=measured, measured=pool_rate, expected=expected,
                                      pool_bytes_per_second=pool_rate, expected_bytes_per_second=expected,
                                      ratio=ratio, expectation=layout_rule(descriptor, direction),
                                      diagnosis=diagnosis,
                                      cpu_busy_ratio=cpu_busy, disk_bytes_per_byte=per_byte, txgs=txgs,
                                      sync_ratio=sync_ratio, threads=threads))
            disks[direction] = busy
    finally:
        await scratch.destroy(dataset)
    return EfficiencyReport(pool=descriptor, raw_read_bytes_per_second=raw, results=results, disks=disks,
                            arc_max_bytes=arc_max_bytes)
