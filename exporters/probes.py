"""Probe runs and their last results, from the probe store (advisor/store/probe_stats.py).

Source: the SQLite database under `state_dir` that the prober (zfs-advisor profile, root)
writes and POST /v1/probes queues into; read once per scrape, in a worker thread, only when
it exists. Nothing here when no probe ever ran.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from advisor.exporters import probe_repeats
from advisor.exporters.base import Scrape, SourceUnreadable, append
from advisor.exporters.registry import collector

RESULT_LABELS = ["pool", "workload", "parameter", "value", "candidate"]


@collector("probes", after="recommendations")
def collect(scrape: Scrape) -> Iterable[Metric]:
    stats = scrape.probes
    if stats is None:
        return
    if stats.unreadable:
        raise SourceUnreadable(stats.unreadable)
    runs = CounterMetricFamily(
        "zfs_advisor_probe_runs",
        "Finished probe runs by outcome (completed, aborted: foreground I/O or a budget stopped it, failed: fio, zfs "
        "or a plan failed, or it was interrupted). Counted from the probe database, so it only grows while the "
        "database is kept. Source: the probe store (GET /v1/probes lists the runs).",
        labels=["pool", "workload", "outcome"])
    for pool, workload, outcome, count in stats.runs:
        append(runs, {"pool": pool, "workload": workload, "outcome": outcome}, float(count))
    yield runs
    last = GaugeMetricFamily("zfs_advisor_probe_last_run_timestamp_seconds",
                             "When the latest finished probe run of this pool and workload ended (Unix time).",
                             labels=["pool", "workload"])
    for pool, workload, ended in stats.last_run:
        append(last, {"pool": pool, "workload": workload}, ended)
    yield last
    iops = GaugeMetricFamily(
        "zfs_advisor_probe_iops",
        "IOPS (reads + writes, mean over the repeats) of the latest completed probe of a parameter on this pool for "
        "this workload: candidate=\"best\" is the value that measured most IOPS, candidate=\"baseline\" the ZFS "
        "default it is compared with (both series when they are the same value).",
        labels=RESULT_LABELS)
    p99 = GaugeMetricFamily(
        "zfs_advisor_probe_write_latency_p99_seconds",
        "Write latency 99th percentile (worst repeat) of the same candidates as zfs_advisor_probe_iops.",
        labels=RESULT_LABELS)
    for m in stats.measured:
        labels = {"pool": m.pool, "workload": m.workload, "parameter": m.parameter, "value": m.value,
                  "candidate": m.candidate}
        append(iops, labels, m.iops)
        if m.write_p99_seconds is not None:
            append(p99, labels, m.write_p99_seconds)
    yield iops
    yield p99
    yield from probe_repeats.collect(scrape)
    queued = GaugeMetricFamily("zfs_advisor_probe_queued_runs",
                               "Probe runs queued by POST /v1/probes that the prober has not started yet.")
    queued.add_metric([], float(stats.queued))
    yield queued
    families = {
        "zfs_advisor_profiler_budget_used_seconds": "Probe time on this pool in the last 24 hours (every run counts).",
        "zfs_advisor_profiler_budget_limit_seconds": "The [profiler] daily_seconds budget per pool.",
        "zfs_advisor_profiler_budget_used_bytes": "Bytes probes wrote to this pool in the last 24 hours, file layouts included.",
        "zfs_advisor_profiler_budget_limit_bytes": "The [profiler] daily_bytes budget per pool.",
    }
    built = {name: GaugeMetricFamily(name, text + " A probe that would exceed it is skipped.", labels=["pool"])
             for name, text in families.items()}
    for b in stats.budgets:
        labels = {"pool": b.pool}
        for name, value in zip(families, (b.used_seconds, b.limit_seconds, b.used_bytes, b.limit_bytes), strict=True):
            append(built[name], labels, float(value))
    yield from built.values()
