"""Measure a pool's efficiency: raw read rate of the member disks, all at once (read-only), then large
sequential writes and reads in a scratch dataset, with disk and CPU counters alongside.

Runs under the same lock, checks, scratch dataset, ARC cap and foreground watch as a probe.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from advisor.host.disks import DISKSTATS, parse_diskstats
from advisor.host.files import HostFiles
from advisor.host.runner import CommandRunner
from advisor.probe.efficiency import (Efficiency, diagnose, disk_busy, expected_bandwidth, layout_rule, raw_read_argv,
                                      raw_read_rates)
from advisor.probe.fio_result import load_fio_json, parse_fio_json
from advisor.probe.runner import ProbeFailed, run_watched_fio
from advisor.probe.foreground import ForegroundWatch
from advisor.probe.safety import Thresholds
from advisor.probe.scratch import ScratchArea

# Large records, no compression (random data would not compress anyway), metadata-only
# caching so the reads come from the disks.
EFFICIENCY_PROPERTIES = {"recordsize": "1M", "compression": "off", "primarycache": "metadata", "atime": "off"}


class EfficiencyReport(BaseModel):
    pool: dict[str, Any]
    raw_read_bytes_per_second: dict[str, float]
    results: list[Efficiency]
    disks: dict[str, dict[str, dict[str, float]]]  # direction -> disk -> busy/bytes
    note: str = ("a disk's write rate is assumed equal to its measured read rate: writing to a raw "
                 "device to measure it would destroy the pool")


def _cpu_times(files: HostFiles) -> tuple[float, float]:
    fields = files.read_text("/proc/stat").splitlines()[0].split()[1:]
    values = [float(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)
    return sum(values), idle


def _job(directory: str, rw: str, size: int, numjobs: int, seconds: int) -> str:
    lines = ["[global]", f"directory={directory}", "ioengine=psync", "bs=1M", f"size={size}",
             f"numjobs={numjobs}", "thread=1", "group_reporting=1", "fallocate=none", "refill_buffers=1",
             "buffer_compress_percentage=0", "end_fsync=1"]
    if rw == "read":
        lines += ["time_based=1", f"runtime={seconds}"]
    return "\n".join([*lines, "", f"[seq-{rw}]", f"rw={rw}", ""])


async def measure(pool_name: str, descriptor: dict[str, Any], runner: CommandRunner, files: HostFiles,
                  scratch: ScratchArea, thresholds: Thresholds, workdir: Path, seconds: int = 10,
                  file_bytes: int = 256 << 20, numjobs: int = 4, deadline: float | None = None) -> EfficiencyReport:
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
    raw = {m: rates[d] for m, d in zip(members, devices)}
    watch = ForegroundWatch(files, pool_name, scratch.root)
    dataset, mountpoint = await scratch.create_child("efficiency", EFFICIENCY_PROPERTIES,
                                                     numjobs * file_bytes * 2 + (256 << 20))
    results, disks = [], {}
    try:
        for direction in ("write", "read"):
            jobfile = workdir / f"efficiency-{direction}.fio"
            jobfile.write_text(_job(mountpoint, direction, file_bytes, numjobs, seconds), encoding="utf-8")
            stats0, cpu0, t0 = parse_diskstats(files.read_text(DISKSTATS)), _cpu_times(files), time.monotonic()
            output = await run_watched_fio(runner, jobfile, watch, thresholds, deadline, pool_name, 900)
            elapsed = time.monotonic() - t0
            stats1, cpu1 = parse_diskstats(files.read_text(DISKSTATS)), _cpu_times(files)
            metrics = parse_fio_json(output)
            busy = disk_busy(stats0, stats1, members, elapsed)
            total = cpu1[0] - cpu0[0]
            cpu_busy = 1 - (cpu1[1] - cpu0[1]) / total if total > 0 else None
            measured = metrics.bandwidth_bytes_per_second
            expected = expected_bandwidth(descriptor, raw, direction)  # type: ignore[arg-type]
            ratio = measured / expected if expected else 0.0
            results.append(Efficiency(direction=direction, measured_bytes_per_second=measured,  # type: ignore[arg-type]
                                      expected_bytes_per_second=expected, ratio=ratio,
                                      expectation=layout_rule(descriptor, direction),  # type: ignore[arg-type]
                                      diagnosis=diagnose(direction, ratio, descriptor, busy, cpu_busy),  # type: ignore[arg-type]
                                      cpu_busy_ratio=cpu_busy))
            disks[direction] = busy
    finally:
        await scratch.destroy(dataset)
    return EfficiencyReport(pool=descriptor, raw_read_bytes_per_second=raw, results=results, disks=disks)
