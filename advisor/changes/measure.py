"""Per-interval values of each compared metric over a window of samples (advisor/changes/samples.py).

For a dataset: its IOPS and bandwidth from its objset counters (what applications asked of it),
and the latency percentiles of its pool (per pool only: `zpool iostat -w` has no per-dataset
rows). For a pool (a module parameter changed): the sum of its datasets' counters and its latency.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from advisor.changes.samples import Counters, PoolSample, Samples
from advisor.changes.stats import percentile, rates


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool
    min_level: float  # below this mean a window has "not enough load"
    headline: bool  # counts in the change's overall verdict


METRICS = (
    Metric("iops", True, 1.0, True),
    Metric("bandwidth", True, 64 * 1024, True),
    Metric("read_latency_p50", False, 0.0, False),
    Metric("read_latency_p99", False, 0.0, False),
    Metric("write_latency_p50", False, 0.0, False),
    Metric("write_latency_p99", False, 0.0, False),
)
BY_NAME = {m.name: m for m in METRICS}
_LATENCY = {"read_latency_p50": ("total_wait_read", 0.50), "read_latency_p99": ("total_wait_read", 0.99),
            "write_latency_p50": ("total_wait_write", 0.50),
            "write_latency_p99": ("total_wait_write", 0.99)}


def _counter_rates(points: Sequence[tuple[float, Counters]], value: Callable[[Counters], int]) -> list[float]:
    return rates([(t, value(c)) for t, c in points])


def latency_values(points: Sequence[tuple[float, PoolSample]], series: str, q: float) -> list[float]:
    """The q-quantile of each interval's own latencies (the difference of the cumulative
    histograms at its ends); intervals without I/O of that kind, or with a histogram that went
    back (the pool re-imported), have none."""
    out = []
    for (_, a), (_, b) in pairwise(points):
        before, after = a.latency.get(series), b.latency.get(series)
        if before is None or after is None or len(before) != len(after) or a.bounds != b.bounds:
            continue
        delta = [y - x for x, y in zip(before, after, strict=True)]
        if any(d < 0 for d in delta):
            continue
        if (value := percentile(b.bounds, delta, q)) is not None:
            out.append(value)
    return out


def window_values(samples: Samples, pool: str, dataset: str | None, times: list[float]) -> dict[str, list[float]]:
    """Each metric's per-interval values over the sample `times` (one window)."""
    pool_points = samples.pool_points(pool, times)
    counters = samples.dataset_points(dataset, times) if dataset else [(t, s.counters) for t, s in pool_points]
    values = {
        "iops": _counter_rates(counters, lambda c: c[0] + c[1]),
        "bandwidth": _counter_rates(counters, lambda c: c[2] + c[3]),
    }
    for name, (series, q) in _LATENCY.items():
        values[name] = latency_values(pool_points, series, q)
    return values
