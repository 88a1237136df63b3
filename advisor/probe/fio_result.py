"""fio's JSON output (`--output-format=json`) parsed into the metrics a probe keeps.

Pure: text in, models out.  Latencies are completion latencies (`clat_ns`) at the
percentiles the job asked for (advisor/probe/fio_job.py), in seconds; fdatasync/fsync
calls have their own latency (`sync`).  With `group_reporting` a job file gives one
entry; several entries (several groups) are summed for rates, and their worst
percentile is kept (percentiles of different groups cannot be merged exactly).
fio(1), "JSON OUTPUT" / "INTERPRETING THE OUTPUT".
"""
from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict

from advisor.probe.fio_job import PERCENTILES


class FioParseError(ValueError):
    """Not fio JSON output, or a job that reports an error."""


class Latency(BaseModel):
    model_config = ConfigDict(frozen=True)
    mean_seconds: float | None = None
    p50_seconds: float | None = None
    p99_seconds: float | None = None
    p999_seconds: float | None = None


class Direction(BaseModel):
    model_config = ConfigDict(frozen=True)
    io_bytes: int = 0
    bandwidth_bytes_per_second: float = 0.0
    iops: float = 0.0
    ios: int = 0
    latency: Latency = Latency()


class FioMetrics(BaseModel):
    """One fio run of a probe, all groups together."""

    model_config = ConfigDict(frozen=True)
    fio_version: str
    read: Direction
    write: Direction
    sync_latency: Latency
    runtime_seconds: float
    cpu_user_ratio: float  # fio's usr_cpu / 100: share of one CPU per job, averaged over the jobs
    cpu_system_ratio: float
    # CPUs' worth fio used over its runtime: each job's share of one CPU times its numjobs (a group's
    # usr_cpu and sys_cpu are per job: fio sums the jobs' CPU time and their run time alike)
    cpu_cores: float = 0.0

    @property
    def iops(self) -> float:
        return self.read.iops + self.write.iops

    @property
    def bandwidth_bytes_per_second(self) -> float:
        return self.read.bandwidth_bytes_per_second + self.write.bandwidth_bytes_per_second


def _latency(section: dict | None) -> Latency:
    if not section or not section.get("N", 1):
        return Latency()
    pct = section.get("percentile") or {}

    def at(p: float) -> float | None:
        value = pct.get(f"{p:.6f}")
        return value / 1e9 if isinstance(value, (int, float)) else None

    mean = section.get("mean")
    return Latency(mean_seconds=mean / 1e9 if isinstance(mean, (int, float)) else None,
                   p50_seconds=at(PERCENTILES[0]), p99_seconds=at(PERCENTILES[1]), p999_seconds=at(PERCENTILES[2]))


def _direction(section: dict) -> Direction:
    ios = int(section.get("total_ios", 0))
    return Direction(io_bytes=int(section.get("io_bytes", 0)), bandwidth_bytes_per_second=float(section.get("bw_bytes", 0)),
                     iops=float(section.get("iops", 0.0)), ios=ios,
                     latency=_latency(section.get("clat_ns")) if ios else Latency())


def _worst(a: Latency, b: Latency) -> Latency:
    def mx(x: float | None, y: float | None) -> float | None:
        return y if x is None else x if y is None else max(x, y)
    return Latency(mean_seconds=mx(a.mean_seconds, b.mean_seconds), p50_seconds=mx(a.p50_seconds, b.p50_seconds),
                   p99_seconds=mx(a.p99_seconds, b.p99_seconds), p999_seconds=mx(a.p999_seconds, b.p999_seconds))


def _add(a: Direction, b: Direction) -> Direction:
    return Direction(io_bytes=a.io_bytes + b.io_bytes,
                     bandwidth_bytes_per_second=a.bandwidth_bytes_per_second + b.bandwidth_bytes_per_second,
                     iops=a.iops + b.iops, ios=a.ios + b.ios, latency=_worst(a.latency, b.latency))


def load_fio_json(text: str) -> dict:
    """fio's JSON document, with at least one job."""
    # fio may print notes before the JSON document (e.g. "fio: file hash not empty").
    start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise FioParseError(f"fio output is not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list) or not doc["jobs"]:
        raise FioParseError("fio output has no jobs")
    return doc


def parse_fio_json(text: str) -> FioMetrics:
    doc = load_fio_json(text)
    read, write, sync = Direction(), Direction(), Latency()
    runtime = usr = sys_ = cores = 0.0
    for job in doc["jobs"]:
        if job.get("error"):
            raise FioParseError(f"fio job {job.get('jobname')!r} failed with error {job['error']}")
        read = _add(read, _direction(job.get("read") or {}))
        write = _add(write, _direction(job.get("write") or {}))
        sync_section = job.get("sync") or {}
        if sync_section.get("total_ios"):
            sync = _worst(sync, _latency(sync_section.get("lat_ns")))
        runtime = max(runtime, float(job.get("job_runtime", 0)) / 1000)
        usr += float(job.get("usr_cpu", 0.0)) / 100
        sys_ += float(job.get("sys_cpu", 0.0)) / 100
        cores += (float(job.get("usr_cpu", 0.0)) + float(job.get("sys_cpu", 0.0))) / 100 * _numjobs(doc, job)
    n = len(doc["jobs"])
    return FioMetrics(fio_version=str(doc.get("fio version", "?")), read=read, write=write, sync_latency=sync,
                      runtime_seconds=runtime, cpu_user_ratio=usr / n, cpu_system_ratio=sys_ / n,
                      cpu_cores=cores)


def _numjobs(doc: dict, job: dict) -> int:
    """The jobs a reported group stands for: its own numjobs, else the global one, else 1."""
    for options in (job.get("job options"), doc.get("global options")):
        if isinstance(options, dict) and str(options.get("numjobs", "")).isdigit():
            return max(1, int(options["numjobs"]))
    return 1
