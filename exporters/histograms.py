"""Latency and request-size histograms from `zpool iostat -w` and `-r`, as Prometheus histograms.

ZFS keeps power-of-two histograms per vdev (vdev_stat_ex_t): bucket i holds
values in [2^i, 2^(i+1)-1] (ns or bytes), counted since the pool was imported
(zpool iostat prints lifetime counts when run without an interval, so these
are real counters). They become cumulative `le` buckets in base units:

- `le` is each bucket's inclusive upper bound (2^(i+1)-1 ns in seconds, or
  bytes). Any subset of bounds is exact because buckets are cumulative, so
  latency buckets below 1 microsecond (never reached by device I/O) are folded
  into the first one emitted, to save series.
- `_sum` of a latency histogram uses each bucket's midpoint 1.5 * 2^i, as
  zpool iostat -l does (single_histo_average() in zpool_main.c), so
  `_sum / _count` equals zpool iostat -l's average latency. `_sum` of a size
  histogram uses each bucket's lower bound 2^i: exact for the power-of-two
  sizes most ZFS I/O have, a lower bound otherwise.

Per pool by default (labels pool, queue, op); per vdev with metrics_per_vdev.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import HistogramMetricFamily, Metric

from advisor.exporters.base import CACHED, Scrape, le
from advisor.exporters.ioclass import latency_labels, size_labels
from advisor.exporters.registry import collector
from advisor.hostmodel.facts import Histogram

MIN_LATENCY_LE_SECONDS = 1e-6  # first latency bucket emitted: 2^10-1 ns (1.023 us)


def _latency_point(bound: float) -> tuple[int, float]:
    """Upper bound in seconds -> (upper bound in ns, midpoint in seconds)."""
    upper_ns = round(bound * 1e9)
    return upper_ns, 0.75 * (upper_ns + 1) / 1e9


def buckets(histogram: Histogram, series: str) -> tuple[list[tuple[str, float]], float]:
    """Cumulative (le, count) pairs ending with +Inf, and the `_sum`, for one series."""
    counts = histogram.counts[series]
    seconds = histogram.unit == "seconds"
    out: list[tuple[str, float]] = []
    cumulative = 0
    total = 0.0
    for bound, count in zip(histogram.bounds, counts, strict=True):
        cumulative += count
        if seconds:
            upper_ns, midpoint = _latency_point(bound)
            total += count * midpoint
            if bound >= MIN_LATENCY_LE_SECONDS:
                out.append((le(upper_ns / 1e9), cumulative))
        else:
            total += count * (bound + 1) / 2
            out.append((le(bound), cumulative))
    out.append(("+Inf", cumulative))
    return out, total


def _families(level: str) -> tuple[HistogramMetricFamily, HistogramMetricFamily]:
    what = "the pool" if level == "pool" else "the vdev"
    labels = ["pool"] if level == "pool" else ["pool", "vdev"]
    latency = HistogramMetricFamily(
        f"zfs_{level}_latency_seconds",
        f"I/O latency on {what} since import (zpool iostat -w): queue=total is queue wait + device, disk the device "
        f"alone, syncq/asyncq/scrubq/trimq/rebuildq the wait in that vdev queue. Source: zpool iostat -w -Hp.{CACHED}",
        labels=[*labels, "queue", "op"],
    )
    size = HistogramMetricFamily(
        f"zfs_{level}_request_size_bytes",
        f"I/O request sizes on {what} since import (zpool iostat -r), by vdev queue; io=individual before and "
        f"aggregated after vdev queue aggregation. Source: zpool iostat -r -Hp.{CACHED}",
        labels=[*labels, "io", "queue", "op"],
    )
    return latency, size


def _add(latency: HistogramMetricFamily, size: HistogramMetricFamily, labels: list[str], lat, req) -> None:
    if lat is not None:
        for series in lat.counts:
            points, total = buckets(lat, series)
            latency.add_metric([*labels, *latency_labels(series)], points, total)
    if req is not None:
        for series in req.counts:
            points, total = buckets(req, series)
            size.add_metric([*labels, *size_labels(series)], points, total)


@collector("histograms", after="vdevs", command_output_only=True)
def collect(scrape: Scrape) -> Iterable[Metric]:
    pool_latency, pool_size = _families("pool")
    vdev_latency, vdev_size = _families("vdev")
    for pool in scrape.pools:
        lat, req = pool.latency_histograms, pool.size_histograms
        _add(pool_latency, pool_size, [pool.name], lat.get(pool.name), req.get(pool.name))
        if scrape.options.per_vdev:
            for vdev in pool.vdevs():
                if vdev.name != pool.name:
                    _add(vdev_latency, vdev_size, [pool.name, vdev.name], lat.get(vdev.name), req.get(vdev.name))
    return (pool_latency, pool_size, vdev_latency, vdev_size)
