"""How long writes waited for a transaction group: /proc/spl/kstat/zfs/<pool>/dmu_tx_assign.

`zfs_pool_tx_assign_seconds`, a histogram since the pool was imported: each dmu_tx_assign() call
in the first power-of-two bucket (2^i ns) not below its time. The time includes the write
throttle's delay (zfs(4): zfs_delay_min_dirty_percent, zfs_delay_scale) and the wait for a new
txg when dirty data reached zfs_dirty_data_max, so the upper buckets filling is the throttle
making applications wait. `_sum` uses each bucket's midpoint, as the latency histograms do.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import HistogramMetricFamily, Metric

from advisor.exporters.base import Scrape
from advisor.exporters.histograms import buckets
from advisor.exporters.registry import collector
from advisor.hostmodel.facts import TX_ASSIGN_SERIES


@collector("tx_assign", after="txgs")
def collect(scrape: Scrape) -> Iterable[Metric]:
    family = HistogramMetricFamily(
        "zfs_pool_tx_assign_seconds",
        "Time writes waited to be assigned to a transaction group since the pool was imported, the write "
        "throttle's delay included. Source: /proc/spl/kstat/zfs/<pool>/dmu_tx_assign.",
        labels=["pool"],
    )
    for pool in scrape.pools:
        if pool.tx_assign is not None:
            points, total = buckets(pool.tx_assign, TX_ASSIGN_SERIES)
            family.add_metric([pool.name], points, total)
    return (family,)
