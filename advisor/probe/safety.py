"""When a probe may run, and when it must stop.

* `check_pool`: healthy (ONLINE), no scrub or resilver, free space above a threshold;
* foreground I/O (anything but the probe's own) is watched by `advisor.probe.foreground`;
* the host's CPU is idle enough before a probe starts (`Thresholds.idle_max_cpu_busy`);
* `ProbeLock`: one probe per pool (and module parameters are host-wide: one probe
  that changes them at a time), with flock(2) locks released by the kernel when the
  process dies, so a killed run never leaves a stale lock behind.
"""
from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from advisor.hostmodel.facts import Pool


@dataclass(frozen=True)
class Thresholds:
    min_free_ratio: float = 0.20  # of the pool, after the probe's quota
    idle_window_seconds: float = 3.0
    idle_max_ops_per_second: float = 5.0
    idle_max_bytes_per_second: float = 256 << 10
    # Not started when the host's CPU (steal included) was busy this share of the idle window or more:
    # a probe that then needs the other half to drive the disks saturates the CPU with others' work
    # in it, and such a run is set aside as evidence (advisor/evidence/bound.py), its budget spent.
    idle_max_cpu_busy: float = 0.5
    # Abort: foreground I/O seen in one poll interval above these.
    abort_poll_seconds: float = 0.2
    abort_min_ops: int = 4
    abort_min_bytes: int = 64 << 10


class UnsafeToProbe(Exception):
    """The pool is not in a state to be probed; the message says why, `kind` in a word
    ("busy": foreground I/O, "cpu": the host's CPU is busy, "budget": the daily budget is spent,
    "unsafe": anything else)."""

    def __init__(self, reason: str, kind: str = "unsafe"):
        super().__init__(reason)
        self.kind = kind


def check_pool(pool: Pool, size_bytes: int | None, free_bytes: int | None, needed_bytes: int,
               thresholds: Thresholds) -> None:
    # The state kstat is current even while zpool hangs (a suspended pool); zpool's health otherwise.
    health = pool.kstat_state or pool.health
    if health != "ONLINE":
        raise UnsafeToProbe(f"pool {pool.name} is {health}, not ONLINE")
    if pool.scan.active:
        raise UnsafeToProbe(f"pool {pool.name}: a {pool.scan.function} is in progress")
    if size_bytes and free_bytes is not None:
        left = (free_bytes - needed_bytes) / size_bytes
        if left < thresholds.min_free_ratio:
            raise UnsafeToProbe(
                f"pool {pool.name}: {free_bytes >> 20} MiB free; after the probe's {needed_bytes >> 20} MiB "
                f"{left:.0%} would be left, below the {thresholds.min_free_ratio:.0%} threshold")


class LockBusy(Exception):
    """Another probe holds the lock; the message says which."""


class ProbeLock:
    def __init__(self, state_dir: Path, pool: str):
        self.paths = [state_dir / f"probe-{pool}.lock", state_dir / "probe-module-params.lock"]
        self._fds: list[int] = []

    def __enter__(self) -> ProbeLock:
        try:
            for path in self.paths:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                self._fds.append(fd)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                    raise LockBusy(f"another probe holds {path} (pid {holder})") from None
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self._fds:
            os.close(fd)  # closing drops the flock
        self._fds = []
