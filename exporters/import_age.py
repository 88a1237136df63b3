"""How long each pool has been imported: the age of its iostats kstat (OpenZFS >= 2.1).

`zfs_pool_import_age_seconds`, the span of every counter the kernel keeps "since import"
(zfs_pool_trim_*, zfs_pool_read_bytes_total, zfs_pool_tx_assign_seconds, zpool iostat's): a
counter over it is its mean rate since import, and a smaller value than before says the pool was
exported and imported again (advisor/host/pool_iostats.py).
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from advisor.exporters.base import Scrape
from advisor.exporters.registry import collector


@collector("import_age", after="pools")
def collect(scrape: Scrape) -> Iterable[Metric]:
    family = GaugeMetricFamily(
        "zfs_pool_import_age_seconds",
        "Time since the pool was imported (created, imported, or read from the cache file when the module "
        "loaded): the span of its since-import counters. Source: /proc/spl/kstat/zfs/<pool>/iostats, its "
        "header's snapshot time less its creation time (OpenZFS >= 2.1).",
        labels=["pool"],
    )
    for pool in scrape.pools:
        if pool.import_age_seconds is not None:
            family.add_metric([pool.name], pool.import_age_seconds)
    return (family,)
