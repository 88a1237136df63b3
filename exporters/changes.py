"""Recorded setting changes and their measured effect (advisor/changes/, docs/changes.md).

Source: the service's change tracker, which compares the I/O of a window before a tracked setting
changed with as long a window after it. One series per (pool, dataset, parameter) for its latest
change; a module parameter's change has no dataset, its effect one series per pool.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from advisor.exporters.base import Scrape, append
from advisor.exporters.registry import collector

WHEN_LABELS = ("pool", "dataset", "parameter", "old", "new", "verdict")
EFFECT_LABELS = ("pool", "dataset", "parameter", "metric")


@collector("changes", after="efficiency")
def collect(scrape: Scrape) -> Iterable[Metric]:
    when = GaugeMetricFamily(
        "zfs_advisor_change_timestamp_seconds",
        "When the service saw a tracked setting change (Unix time of the first collection with the new value), "
        "for the latest change of each pool/dataset/parameter: old and new value as zfs get -p or the module "
        "parameter file says them, verdict measuring, better, worse, mixed, no measurable effect or not enough "
        "load. A module parameter's change has no pool and no dataset. GET /v1/changes explains each. "
        "Source: the change tracker (docs/changes.md).",
        labels=list(WHEN_LABELS),
    )
    effect = GaugeMetricFamily(
        "zfs_advisor_change_effect_ratio",
        "Measured effect of the latest change of each pool/dataset/parameter: the mean of metric in the window "
        "after it over the window before it (1 = no change); metric is iops, bandwidth (objset counters: the "
        "dataset's, or the sum of the pool's for a module parameter), read_latency_p50/p99 or "
        "write_latency_p50/p99 (the pool's, zpool iostat -w total_wait). Only finished comparisons with load "
        "in both windows have series. Source: the change tracker (docs/changes.md).",
        labels=list(EFFECT_LABELS),
    )
    for r in scrape.changes:
        append(when, dict(zip(WHEN_LABELS, (r["pool"] or "", r["dataset"] or "", r["parameter"], r["old"], r["new"],
                                            r["verdict"]), strict=True)), float(r["detected_at_epoch"]))
        for e in r["effects"]:
            if e["ratio"] is not None:
                append(effect, {"pool": e["pool"], "dataset": e["dataset"] or "", "parameter": r["parameter"],
                                "metric": e["metric"]}, float(e["ratio"]))
    yield when
    yield effect
