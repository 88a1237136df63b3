"""The fio job of a probe: a workload profile's job (rules/workloads/*.yaml) made measurable.

Pure: profile + role + hygiene settings in, job file text out.  What is added to the
profile's own options, and why (each is a mistake a benchmark of ZFS easily makes):

* ``directory`` — the candidate's scratch dataset, nothing else is ever written;
* ``time_based``/``runtime``/``ramp_time`` — a fixed budget, the warm-up not counted;
* ``buffer_compress_percentage`` + ``refill_buffers`` — data that is neither zeros (which
  compression swallows) nor a slow random source, at a stated compressibility;
* ``randrepeat=0`` — repeats are independent samples, not the same offsets again;
* ``fallocate=none`` — files are laid out by writing them, never sparse (reads of a hole
  never reach a disk);
* ``size`` capped — a short probe; the ARC is capped below it while the probe runs
  (advisor/probe/plan_runner.py), so the working set is not served from memory;
* ``percentile_list`` — p50, p99 and p99.9 of completion latency;
* ``group_reporting`` — one result with merged latency histograms for the whole job;
* ``thread`` — jobs are threads of one fio process, so an abort that kills it stops all.

fio(1), "JOB PARAMETERS": https://fio.readthedocs.io/en/latest/fio_doc.html
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.engine.schema import Workload
from advisor.engine.units import parse_size

PERCENTILES = (50.0, 99.0, 99.9)


@dataclass(frozen=True)
class Hygiene:
    runtime_seconds: int = 30
    ramp_seconds: int = 5
    max_file_bytes: int = 1 << 30
    compress_percentage: int = 50  # stated compressibility of written data, unless the profile says
    max_numjobs: int = 4


@dataclass(frozen=True)
class FioJob:
    text: str
    sections: tuple[str, ...]
    working_set_bytes: int  # bytes of files the job reads and writes
    compress_percentage: int
    runtime_seconds: int
    ramp_seconds: int

    @property
    def layout_text(self) -> str:
        """The same job with `create_only`: lays the files out (writes them) and stops."""
        return self.text.replace("[global]\n", "[global]\ncreate_only=1\n", 1)

    @property
    def seconds(self) -> int:
        return self.runtime_seconds + self.ramp_seconds


class JobError(ValueError):
    """The workload's job cannot be probed as asked (unknown role, nothing left to run)."""


def probe_sections(workload: Workload, role: str | None) -> list[str]:
    """The job sections that emulate `role` (Workload.job_sections), or JobError."""
    try:
        return workload.job_sections(role)
    except ValueError as exc:
        raise JobError(str(exc)) from None


def build_job(workload: Workload, directory: str, hygiene: Hygiene = Hygiene(), role: str | None = None,
              params: dict[str, str] | None = None) -> FioJob:
    if not directory.startswith("/") or "\n" in directory or ":" in directory:
        raise JobError(f"fio directory must be an absolute path without ':' or newlines: {directory!r}")
    values = {name: (params or {}).get(name, p.default) for name, p in workload.parameters.items()}
    sections = probe_sections(workload, role)

    def render(options: dict[str, str | int]) -> dict[str, str]:
        return {k: str(v).format(**values) for k, v in options.items()}

    base = render(workload.fio["global"])
    compress = int(base.get("buffer_compress_percentage", hygiene.compress_percentage))
    glob = {k: v for k, v in base.items() if k != "size"}  # sizes go per section, capped
    glob.update({
        "directory": directory,
        "time_based": "1",
        "runtime": str(hygiene.runtime_seconds),
        "ramp_time": str(hygiene.ramp_seconds),
        "randrepeat": "0",
        "fallocate": "none",
        "refill_buffers": "1",
        "buffer_compress_percentage": str(compress),
        "group_reporting": "1",
        "thread": "1",  # one process: killing it (an abort) stops every job at once
        "percentile_list": ":".join(f"{p:g}" for p in PERCENTILES),
    })
    lines = ["[global]", *(f"{k}={v}" for k, v in glob.items()), ""]
    working_set = 0
    for name in sections:
        options = render(workload.fio[name])
        size = _capped_size(options.get("size", base.get("size")), hygiene.max_file_bytes)
        options["size"] = str(size)
        numjobs = min(int(options.get("numjobs", glob.get("numjobs", "1"))), hygiene.max_numjobs)
        options["numjobs"] = str(numjobs)
        if "buffer_compress_percentage" in options:
            compress = int(options["buffer_compress_percentage"])
        working_set += size * numjobs
        lines += [f"[{name}]", *(f"{k}={v}" for k, v in options.items()), ""]
    return FioJob("\n".join(lines), tuple(sections), working_set, compress,
                  hygiene.runtime_seconds, hygiene.ramp_seconds)


def _capped_size(size: str | None, cap: int) -> int:
    if size is None:
        return cap
    try:
        return min(parse_size(size), cap)
    except ValueError as exc:
        raise JobError(f"fio size {size!r}: {exc}") from None
