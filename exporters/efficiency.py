"""Pool efficiency: each pool's latest `probe --efficiency` report (advisor/evidence/efficiency.py).

Source: the probe store under `state_dir`, read with the probe families once per scrape in a
worker thread (advisor/store/probe_stats.py), only when it exists. Nothing here for a pool never
measured; a report the service cannot read is left out, and the service log says why.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from advisor.exporters.base import Scrape, SourceUnreadable, append
from advisor.exporters.registry import collector


@collector("efficiency", after="probes")
def collect(scrape: Scrape) -> Iterable[Metric]:
    stats = scrape.probes
    if stats is None:
        return
    if stats.unreadable:
        raise SourceUnreadable(stats.unreadable)
    ratio = GaugeMetricFamily(
        "zfs_advisor_pool_efficiency_ratio",
        "The pool's measured rate over what its layout should give from its disks' own measured rate (1 = all of "
        "it), per test of its latest `zfs-advisor probe --pool P --efficiency` run: seq-read, seq-write, and the "
        "random tests the run carries. Source: the probe store (GET /v1/efficiency has the diagnosis).",
        labels=["pool", "test"])
    measured = GaugeMetricFamily(
        "zfs_advisor_pool_efficiency_timestamp_seconds",
        "When the pool's latest efficiency report was measured (Unix time).", labels=["pool"])
    for found in stats.efficiency:
        if not scrape.options.wants_pool(found.pool):
            continue
        for result in found.results:
            append(ratio, {"pool": found.pool, "test": result.test}, result.ratio)
        append(measured, {"pool": found.pool}, found.measured_at)
    yield ratio
    yield measured
