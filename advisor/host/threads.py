"""CPU time of each thread, by name: /proc/<pid>/task/<tid>/stat (proc(5)).

A host's CPU figure (/proc/stat) averages over every core, so one saturated thread on a host of
many cores hides in it; ZFS issues and completes its I/O in named kernel threads (z_wr_iss,
z_wr_int, z_rd_int, txg_sync, ...), each with its own pid, which show here one by one.

Fields of a stat line, counted from 1 as proc(5) does: 1 pid, 2 (comm), 3 state, 4 ppid, ...,
14 utime, 15 stime, in clock ticks.  comm is in parentheses and may itself hold spaces and
parentheses, so the fields after it are split from the LAST ')'.  Kernel threads are children of
kthreadd (pid 2, ppid 2); a userland process's threads are listed under its task/ directory.
"""
from __future__ import annotations

import os
import re

from pydantic import BaseModel

from advisor.host.files import HostFiles
from advisor.host.parsing import ParseError, shown

PROC = "/proc"
KTHREADD = 2
# Kernel threads of ZFS and SPL, by the start of their name (comm, at most 15 characters).
ZFS_THREAD_PREFIXES = ("z_", "txg_", "spa_", "dp_", "arc_", "dbu_", "dbuf_", "l2arc", "zvol", "zthr",
                       "mmp", "spl_", "zil_", "metaslab", "vdev_", "dsl_", "dmu_", "sync_taskq")
_DIGITS = re.compile(r"[0-9]+")


class ThreadTicks(BaseModel):
    tid: int
    comm: str
    ppid: int
    ticks: int  # utime + stime

    @property
    def kernel(self) -> bool:
        return self.ppid == KTHREADD or self.tid == KTHREADD


class ThreadBusy(BaseModel):
    name: str
    tid: int
    busy_ratio: float  # its CPU seconds over the wall seconds (1.0: one core all the time)


class ThreadGroup(BaseModel):
    """Threads of one name with the digits stripped (z_wr_int_0, z_wr_int_1 ... -> z_wr_int)."""
    name: str
    threads: int
    busy_ratio: float  # summed over its threads: 2.0 is two cores' worth
    busiest_ratio: float  # its busiest thread's


class ThreadCpu(BaseModel):
    seconds: float
    busiest: list[ThreadBusy]  # the busiest threads, busiest first
    groups: list[ThreadGroup]  # busiest first


def parse_thread_stat(text: str) -> ThreadTicks:
    """One /proc/<pid>/stat (or task/<tid>/stat) line -> its id, name, parent and CPU ticks."""
    start, end = text.find("("), text.rfind(")")
    if start < 0 or end < start:
        raise ParseError(f"not a proc stat line: {shown(text)}")
    rest = text[end + 1:].split()
    try:
        # rest[0] is field 3 (state): field n is rest[n - 3]
        return ThreadTicks(tid=int(text[:start]), comm=text[start + 1:end], ppid=int(rest[1]),
                           ticks=int(rest[11]) + int(rest[12]))
    except (IndexError, ValueError):
        raise ParseError(f"not a proc stat line: {shown(text)}") from None


def read_thread_ticks(files: HostFiles) -> dict[int, ThreadTicks]:
    """Every thread of the host by tid.  Threads that end between the listing and the read are
    skipped (they are gone; what they used before is not counted)."""
    out: dict[int, ThreadTicks] = {}
    for pid in files.listdir(PROC):
        if not pid.isdigit():
            continue
        try:
            tids = files.listdir(f"{PROC}/{pid}/task")
        except OSError:
            tids = [pid]
        for tid in tids:
            if not tid.isdigit():
                continue
            try:
                stat = parse_thread_stat(files.read_text(f"{PROC}/{pid}/task/{tid}/stat"))
            except OSError:
                continue
            out[stat.tid] = stat
    return out


def group_name(comm: str) -> str:
    """z_wr_int_3 -> z_wr_int; z_wr_iss stays; kworker/u4:2 -> kworker/u:"""
    return _DIGITS.sub("", comm).rstrip("_") or comm


def is_zfs_thread(thread: ThreadTicks) -> bool:
    return thread.kernel and thread.comm.startswith(ZFS_THREAD_PREFIXES)


def clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def thread_cpu(before: dict[int, ThreadTicks], after: dict[int, ThreadTicks], seconds: float,
               ticks_per_second: int, zfs_only: bool = True, top: int = 5) -> ThreadCpu:
    """Each thread's CPU over `seconds` between two readings; a thread present in both only
    (one that started in between has no start to count from)."""
    busy: list[ThreadBusy] = []
    for tid, a in after.items():
        b = before.get(tid)
        if b is None or b.comm != a.comm or (zfs_only and not is_zfs_thread(a)) or seconds <= 0:
            continue
        # over a window a little shorter than the readings (fio's runtime), capped at one core
        ratio = min(1.0, (a.ticks - b.ticks) / ticks_per_second / seconds)
        busy.append(ThreadBusy(name=a.comm, tid=tid, busy_ratio=ratio))
    groups: dict[str, list[float]] = {}
    for t in busy:
        groups.setdefault(group_name(t.name), []).append(t.busy_ratio)
    busy.sort(key=lambda t: (-t.busy_ratio, t.tid))
    summary = [ThreadGroup(name=n, threads=len(r), busy_ratio=sum(r), busiest_ratio=max(r)) for n, r in groups.items()]
    summary.sort(key=lambda g: (-g.busy_ratio, g.name))
    return ThreadCpu(seconds=seconds, busiest=busy[:top], groups=[g for g in summary[:top] if g.busy_ratio > 0])


def zfs_thread_cores(before: dict[int, ThreadTicks], after: dict[int, ThreadTicks], seconds: float,
                     ticks_per_second: int) -> float:
    """CPUs' worth every ZFS kernel thread used between two readings, all together (`thread_cpu`
    names the busiest; this is their sum, to set against the host's CPU time)."""
    if seconds <= 0:
        return 0.0
    ticks = sum(max(0, a.ticks - b.ticks) for tid, a in after.items()
                if (b := before.get(tid)) is not None and b.comm == a.comm and is_zfs_thread(a))
    return ticks / ticks_per_second / seconds
