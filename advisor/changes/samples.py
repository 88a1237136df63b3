"""A bounded ring of per-collection I/O samples, per dataset and per pool, in memory.

What a before/after comparison needs: a dataset's objset counters (reads, writes, bytes read and
written: /proc/spl/kstat/zfs/<pool>/objset-*), and per pool the sum of its datasets' counters
and its latency histograms (`zpool iostat -w`, the pool's own rows). Kept for `horizon_seconds`,
in memory only: a restart starts them afresh (docs/changes.md).

A dataset's counters are appended only when they moved, so an idle dataset costs one entry
however long it idles; its value at any sample time is its last entry at or before it.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterator

from advisor.facts import Host, Pool

Counters = tuple[int, int, int, int]  # reads, writes, bytes read, bytes written
LATENCY_SERIES = ("total_wait_read", "total_wait_write")  # zpool-iostat(8) -w: queue + disk time


@dataclass(frozen=True)
class PoolSample:
    counters: Counters  # the sum of its datasets' objset counters
    bounds: tuple[float, ...]  # the latency histogram's bucket upper bounds, seconds
    latency: dict[str, tuple[int, ...]]  # LATENCY_SERIES -> cumulative per-bucket counts


def dataset_counters(host: Host) -> Iterator[tuple[str, Counters]]:
    for ds in host.datasets:
        io = ds.io
        if io is None:
            continue
        yield ds.name, (io.int("reads", 0) or 0, io.int("writes", 0) or 0, io.int("nread", 0) or 0,
                        io.int("nwritten", 0) or 0)


def pool_sample(pool: Pool, counters: Counters) -> PoolSample:
    histogram = pool.latency_histograms.get(pool.name)
    if histogram is None:
        return PoolSample(counters, (), {})
    return PoolSample(counters, tuple(histogram.bounds),
                      {s: tuple(histogram.counts[s]) for s in LATENCY_SERIES if s in histogram.counts})


class Samples:
    def __init__(self, horizon_seconds: float) -> None:
        self.horizon_seconds = horizon_seconds
        self.times: deque[float] = deque()
        self.datasets: dict[str, deque[tuple[float, Counters]]] = {}
        self.pools: dict[str, deque[tuple[float, PoolSample]]] = {}

    def add(self, host: Host, at: float) -> None:
        """One collection's counters, taken at `at` (seconds since the epoch)."""
        if self.times and at <= self.times[-1]:
            return  # the same collection again, or a clock that went back: not a new interval
        self.times.append(at)
        sums: dict[str, list[int]] = {p.name: [0, 0, 0, 0] for p in host.pools}
        seen = set()
        for name, counters in dataset_counters(host):
            seen.add(name)
            series = self.datasets.setdefault(name, deque())
            if not series or series[-1][1] != counters:
                series.append((at, counters))
            if (total := sums.get(name.split("/", 1)[0])) is not None:
                for i, v in enumerate(counters):
                    total[i] += v
        for gone in [n for n in self.datasets if n not in seen]:
            del self.datasets[gone]  # destroyed (or its kstat unreadable): its history means nothing now
        for pool in host.pools:
            self.pools.setdefault(pool.name, deque()).append((at, pool_sample(pool, tuple(sums[pool.name]))))
        for gone in [n for n in self.pools if n not in sums]:
            del self.pools[gone]
        self._prune(at - self.horizon_seconds)

    def _prune(self, cutoff: float) -> None:
        while len(self.times) > 1 and self.times[1] <= cutoff:
            self.times.popleft()
        for series in (*self.datasets.values(), *self.pools.values()):
            while len(series) > 1 and series[1][0] <= cutoff:  # the entry in force at the cutoff stays
                series.popleft()

    def span(self, start: float, end: float) -> list[float]:
        """The sample times in [start, end]."""
        return [t for t in self.times if start <= t <= end]

    def dataset_points(self, name: str, times: list[float]) -> list[tuple[float, Counters]]:
        return _at(self.datasets.get(name, ()), times)

    def pool_points(self, name: str, times: list[float]) -> list[tuple[float, PoolSample]]:
        return _at(self.pools.get(name, ()), times)


def _at(series, times: list[float]) -> list:
    """(t, the series' value in force at t) for each of `times` that the series covers."""
    out, entries, i, current = [], list(series), 0, None
    for t in times:
        while i < len(entries) and entries[i][0] <= t:
            current = entries[i][1]
            i += 1
        if current is not None:
            out.append((t, current))
    return out
