"""A bounded ring of per-collection I/O samples, per dataset and per pool, in memory.

What a before/after comparison needs: a dataset's objset counters (reads, writes, bytes read and
written: /proc/spl/kstat/zfs/<pool>/objset-*), and per pool the sum of its datasets' counters
and its latency histograms (`zpool iostat -w`, the pool's own rows). Kept for `horizon_seconds`,
in memory only: a restart starts them afresh (docs/changes.md).

A dataset's counters are appended only when they moved, so an idle dataset costs one entry
however long it idles; its value at any sample time is its last entry at or before it.
"""
from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from advisor.hostmodel.facts import Host, Pool

Counters = tuple[int, int, int, int]  # reads, writes, bytes read, bytes written
LATENCY_SERIES = ("total_wait_read", "total_wait_write")
SWEEP_EVERY = 20  # collections between two prunings of every series (a busy one is pruned as it grows)  # zpool-iostat(8) -w: queue + disk time


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


class CounterSeries:
    """One dataset's counters when they moved, flat in one array of 64-bit integers (time in
    milliseconds, then the four counters): 40 bytes an entry, where tuples took about 200."""

    WIDTH = 5

    def __init__(self) -> None:
        self.data = array("q")

    def __len__(self) -> int:
        return len(self.data) // self.WIDTH

    def last(self) -> Counters | None:
        return tuple(self.data[-4:]) if self.data else None  # type: ignore[return-value]  # 4 ints: Counters

    def append(self, at: float, counters: Counters) -> None:
        self.data.extend((round(at * 1000), *counters))

    def drop_before(self, cutoff: float) -> None:
        """Entries older than `cutoff`, but the one in force at it."""
        limit, w, n = round(cutoff * 1000), self.WIDTH, len(self)
        keep = 0
        while keep + 1 < n and self.data[(keep + 1) * w] <= limit:
            keep += 1
        if keep:
            del self.data[: keep * w]

    def entries(self) -> list[tuple[float, Counters]]:
        d, w = self.data, self.WIDTH
        rows = range(0, len(d), w)
        return [(d[i] / 1000, tuple(d[i + 1:i + w])) for i in rows]  # type: ignore[misc]  # WIDTH - 1 ints: Counters


class Samples:
    def __init__(self, horizon_seconds: float) -> None:
        self.horizon_seconds = horizon_seconds
        self.times: deque[float] = deque()
        self.datasets: dict[str, CounterSeries] = {}
        self._sweeps = 0
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
            series = self.datasets.get(name)
            if series is None:
                series = self.datasets[name] = CounterSeries()
            if series.last() != counters:
                series.append(at, counters)
                series.drop_before(at - self.horizon_seconds)  # busy series here; idle ones in the sweep
            if (total := sums.get(name.split("/", 1)[0])) is not None:
                for i, v in enumerate(counters):
                    total[i] += v
        for gone in [n for n in self.datasets if n not in seen]:
            del self.datasets[gone]  # destroyed (or its kstat unreadable): its history means nothing now
        for pool in host.pools:
            ops_read, ops_written, bytes_read, bytes_written = sums[pool.name]
            self.pools.setdefault(pool.name, deque()).append(
                (at, pool_sample(pool, (ops_read, ops_written, bytes_read, bytes_written))))
        for gone in [n for n in self.pools if n not in sums]:
            del self.pools[gone]
        self._prune(at - self.horizon_seconds)

    def _prune(self, cutoff: float) -> None:
        while len(self.times) > 1 and self.times[1] <= cutoff:
            self.times.popleft()
        self._sweeps += 1
        if self._sweeps % SWEEP_EVERY == 0:  # an idle series keeps at most the entries of its last moves
            for series in self.datasets.values():
                series.drop_before(cutoff)
        for pool in self.pools.values():
            while len(pool) > 1 and pool[1][0] <= cutoff:  # the entry in force at the cutoff stays
                pool.popleft()

    def span(self, start: float, end: float) -> list[float]:
        """The sample times in [start, end]."""
        return [t for t in self.times if start <= t <= end]

    def dataset_points(self, name: str, times: list[float]) -> list[tuple[float, Counters]]:
        series = self.datasets.get(name)
        return _at(series.entries() if series is not None else [], times)

    def pool_points(self, name: str, times: list[float]) -> list[tuple[float, PoolSample]]:
        return _at(list(self.pools.get(name, ())), times)


def _at(entries: list, times: list[float]) -> list:
    """(t, the entry's value in force at t) for each of `times` that the entries cover."""
    out, i, current = [], 0, None
    for t in times:
        while i < len(entries) and entries[i][0] <= t + 0.0005:  # entries keep whole milliseconds
            current = entries[i][1]
            i += 1
        if current is not None:
            out.append((t, current))
    return out
