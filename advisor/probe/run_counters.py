"""The host's counters read before and after each fio run of a probe, and what they say about the
run (advisor/evidence/bound.py judges it): the host's CPU and steal time (/proc/stat), ZFS's kernel
threads' CPU (/proc/<pid>/task/<tid>/stat, as the efficiency runs read it) and the busy time of the
pool's disks (/proc/diskstats io_ticks, and the summed I/O time as its upper end).  Everything is read through the host's file view, so a
recorded host replays it; a counter that cannot be read is left out, and the run is then not judged
on it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from advisor.evidence.bound import RunLoad
from advisor.host.cpustat import CpuTimes, cpu_share, read_cpu_times
from advisor.host.disks import read_diskstats
from advisor.host.files import HostFiles
from advisor.host.parsing import ParseError
from advisor.host.threads import ThreadTicks, clock_ticks, read_thread_ticks, zfs_thread_cores
from advisor.hostmodel.facts import DiskStats


@dataclass(frozen=True)
class LoadSample:
    at: float  # time.monotonic()
    cpu: CpuTimes | None
    disks: dict[str, DiskStats]  # the pool's disks only
    threads: dict[int, ThreadTicks] | None


def sample_load(files: HostFiles, disks: list[str]) -> LoadSample:
    """Read now (blocking: a host's every thread is a file): call it off the event loop."""
    try:
        cpu: CpuTimes | None = read_cpu_times(files)
    except (OSError, ParseError):
        cpu = None
    try:
        stats = {name: s for name, s in read_diskstats(files).items() if name in disks}
    except (OSError, ParseError):
        stats = {}
    try:
        threads: dict[int, ThreadTicks] | None = read_thread_ticks(files)
    except (OSError, ParseError):
        threads = None
    return LoadSample(time.monotonic(), cpu, stats, threads)


def pool_disks(descriptor: dict) -> list[str]:
    """The whole disks under the pool, as its descriptor names them (advisor/probe/pooldesc.py)."""
    return [d["name"] for d in descriptor.get("disks") or [] if d.get("name")]


def run_load(before: LoadSample, after: LoadSample, seconds: float, fio_cores: float | None,
             ticks_per_second: int | None = None) -> RunLoad:
    """The host over a run between two samples; `seconds`: the window fio did I/O in (the disks'
    busy time and the threads' CPU are shares of it)."""
    share = cpu_share(before.cpu, after.cpu) if before.cpu and after.cpu else None
    zfs = None
    if before.threads is not None and after.threads is not None:
        zfs = zfs_thread_cores(before.threads, after.threads, seconds, ticks_per_second or clock_ticks())
    others = None
    if share is not None:
        probe = (fio_cores or 0.0) + (zfs or 0.0)
        others = max(0.0, share.busy - share.steal - probe / share.cpus)
    disks = {name: min(1.0, max(0.0, after.disks[name].io_seconds - b.io_seconds) / seconds)
             for name, b in before.disks.items() if name in after.disks and seconds > 0}
    in_flight = {name: max(0.0, after.disks[name].weighted_io_seconds - b.weighted_io_seconds) / seconds
                 for name, b in before.disks.items() if name in after.disks and seconds > 0}
    return RunLoad(seconds=seconds, cpus=share.cpus if share else None,
                   cpu_busy_ratio=share.busy if share else None, cpu_steal_ratio=share.steal if share else None,
                   fio_cores=fio_cores, zfs_thread_cores=zfs, others_ratio=others, disks_busy=disks,
                   disks_in_flight=in_flight)


def io_window(elapsed: float, runtime_seconds: float, ramp_seconds: float) -> float:
    """The seconds fio did I/O in: its runtime and ramp, when that fits in the wall time between
    the readings (fio also starts and stops: in the lab's emulated VM the wall time was 1.37-1.44 x
    a 5 s run, docs/probes.md), else the wall time."""
    active = runtime_seconds + ramp_seconds
    return active if 0 < active <= elapsed else elapsed
