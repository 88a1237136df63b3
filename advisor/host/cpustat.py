"""The host's CPU time: the first line of /proc/stat, and how many CPUs it sums (proc(5)).

    cpu  user nice system idle iowait irq softirq steal guest guest_nice
    cpu0 ...

in USER_HZ ticks since boot, summed over every CPU.  `guest` and `guest_nice` are already
counted in `user` and `nice` (proc(5): "Time spent running a virtual CPU for guest operating
systems"; the kernel counts that time in both fields), so the total leaves them out.  `iowait` is idle time
(proc(5): "Time waiting for I/O to complete. This value is not reliable"): a CPU waiting for a
disk is free for other work.  `steal` (since Linux 2.6.11) is time a hypervisor ran someone
else while this guest wanted the CPU: busy for the guest, and none of its own work.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.host.files import HostFiles
from advisor.host.parsing import ParseError, shown, to_int

PROC_STAT = "/proc/stat"


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative ticks over every CPU."""
    total: int  # user + nice + system + idle + iowait + irq + softirq + steal
    idle: int  # idle + iowait
    steal: int
    cpus: int  # the cpuN lines: how many CPUs the totals sum over

    @property
    def busy(self) -> int:
        return self.total - self.idle


def parse_cpu_times(text: str) -> CpuTimes:
    """/proc/stat -> its `cpu` line's ticks; ParseError when there is none or it is not numbers."""
    lines = text.splitlines()
    head = lines[0].split() if lines else []
    if not head or head[0] != "cpu" or len(head) < 5:
        raise ParseError(f"{PROC_STAT}: the first line is no cpu line: {shown(lines[0] if lines else '')}")
    ticks = [to_int(v, f"{PROC_STAT} cpu") for v in head[1:9]]
    ticks += [0] * (8 - len(ticks))  # what older kernels lack: steal before 2.6.11, iowait, irq, softirq before 2.6
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    cpus = sum(1 for line in lines[1:] if line.startswith("cpu") and line[3:4].isdigit())
    return CpuTimes(total=user + nice + system + idle + iowait + irq + softirq + steal, idle=idle + iowait,
                    steal=steal, cpus=max(1, cpus))


def read_cpu_times(files: HostFiles) -> CpuTimes:
    return parse_cpu_times(files.read_text(PROC_STAT))


@dataclass(frozen=True)
class CpuShare:
    """Shares of the host's CPU time between two readings (0..1 of every CPU's time)."""
    busy: float  # not idle: steal included
    steal: float
    cpus: int


def cpu_share(before: CpuTimes, after: CpuTimes) -> CpuShare | None:
    """None when no time passed between the readings (the same tick, or a counter reset)."""
    total = after.total - before.total
    if total <= 0:
        return None
    busy = max(0, after.busy - before.busy) / total
    steal = max(0, after.steal - before.steal) / total
    return CpuShare(busy=min(1.0, busy), steal=min(1.0, steal), cpus=after.cpus)
