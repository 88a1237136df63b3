"""The latest probe runs whole, for a fleet to learn from (docs/fleet.md): every repeat of every
candidate of a dataset property, what the run is described by, and the shape of the pool.

Source: the probe store, read with the other probe families (advisor/store/probe_stats.py
ExportedRun). A Prometheus that scrapes many daemons then holds each pool's measurements beside
its descriptor, and another daemon whose pool has the same descriptor reads them back as
observations of sibling pools (advisor/fleet/).

Cardinality: per pool, workload and dataset property probed, its latest run's candidates (six
for the recordsize grid, or those a `probe --param` run lists) times their repeats (at most
MAX_EXPORTED_REPEATS), three families; one info series per probed pool.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric

from advisor.exporters.base import Scrape, append
from advisor.hostmodel.pool_labels import SIBLING_LABELS, pool_labels

REPEAT_LABELS = ["pool", "workload", "parameter", "value", "repeat"]
RUN_LABELS = ["pool", "workload", "parameter"]
POOL_INFO_LABELS = ["pool", *SIBLING_LABELS]


def collect(scrape: Scrape) -> Iterable[Metric]:
    runs = scrape.probes.exported_runs
    if not runs:
        return
    iops = GaugeMetricFamily(
        "zfs_advisor_probe_repeat_iops",
        "IOPS (reads + writes) of one repeat of one candidate of the latest completed probe of a dataset property "
        "on this pool for this workload (every candidate, every repeat: what a fleet's model reads back).",
        labels=REPEAT_LABELS)
    bandwidth = GaugeMetricFamily(
        "zfs_advisor_probe_repeat_bandwidth_bytes_per_second",
        "Bytes per second read + written by the same repeat as zfs_advisor_probe_repeat_iops.", labels=REPEAT_LABELS)
    p99 = GaugeMetricFamily(
        "zfs_advisor_probe_repeat_write_latency_p99_seconds",
        "Write latency 99th percentile of the same repeat as zfs_advisor_probe_repeat_iops (none: it wrote nothing).",
        labels=REPEAT_LABELS)
    working_set = GaugeMetricFamily(
        "zfs_advisor_probe_run_working_set_bytes",
        "The working set of the run zfs_advisor_probe_repeat_iops shows (0: not known).", labels=RUN_LABELS)
    arc_max = GaugeMetricFamily(
        "zfs_advisor_probe_run_arc_max_bytes",
        "The ARC cap the same run is described by: the one it set, or for a probe that kept its data out of the ARC "
        "the one a capped probe would have set (0: none).", labels=RUN_LABELS)
    info = InfoMetricFamily(
        "zfs_advisor_probe_pool",
        "The shape of the pool as its latest probe run described it (the model's pool descriptor), with the data "
        "disks' count and model and the loaded OpenZFS series (major.minor): which pools are siblings.", labels=POOL_INFO_LABELS)
    described: dict[str, dict[str, str]] = {}
    for run in runs:
        run_labels = {"pool": run.pool, "workload": run.workload, "parameter": run.parameter}
        append(working_set, run_labels, float(run.working_set_bytes or 0))
        append(arc_max, run_labels, float(run.arc_max_bytes or 0))
        for r in run.repeats:
            labels = {**run_labels, "value": r.value, "repeat": str(r.repeat)}
            append(iops, labels, r.iops)
            append(bandwidth, labels, r.bandwidth)
            if r.write_p99_seconds is not None:
                append(p99, labels, r.write_p99_seconds)
        if run.pool not in described:
            described[run.pool] = pool_labels(run.pool, run.shape, run.disks, scrape.host)
    for labels in described.values():
        append(info, labels, 1.0)
    yield from (iops, bandwidth, p99, working_set, arc_max, info)
