"""ARC and L2ARC: /proc/spl/kstat/zfs/arcstats (module/zfs/arc.c, arc_stats_t).

Sizes and targets are gauges in bytes (zfs_arc_size_bytes, zfs_arc_c_bytes,
...); hits, misses, evictions and L2ARC traffic are counters. Every numeric
field is exported, so fields that appear in newer releases (iohits, the
uncached state, pd/pm in 2.2+) show up without code changes.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import Metric

from advisor.exporters.base import Scrape
from advisor.exporters.named import KStatSpec, kstat_families
from advisor.exporters.registry import collector

_SIZES = (
    r"size|c|c_min|c_max|p|.*_size|.*_asize|.*_(data|metadata)"
    r"|arc_(meta_used|meta_limit|meta_max|meta_min|dnode_limit|sys_free|need_free|tempreserve|loaned_bytes|raw_size)"
    r"|memory_(all|free|available)_bytes|l2_log_blk_avg_asize"
)
SPEC = KStatSpec(
    prefix="zfs_arc",
    path="/proc/spl/kstat/zfs/arcstats",
    gauges=_SIZES + r"|hash_(elements|elements_max|chains|chain_max)|arc_no_grow|l2_log_blk_count"
    r"|l2_data_to_meta_ratio|cached_only_in_progress|pd|pm|meta",
    counters=r"l2_rebuild_(size|asize)",
    bytes=_SIZES + r"|evict_l2_.*|l2_(read|write)_bytes|l2_rebuild_(size|asize)",
    strip="arc_",
    names={
        "c": "target_size",
        "p": "mru_target_size",
        "size": "size",
        "meta": "meta_target_ratio",
        "pd": "mru_data_target_ratio",
        "pm": "mru_metadata_target_ratio",
    },
    # OpenZFS >= 2.2 keeps these targets as fractions of 2^32 (arc.c: arc_meta, arc_pd, arc_pm)
    scale={"meta": 2.0**-32, "pd": 2.0**-32, "pm": 2.0**-32},
    help={
        "size": "ARC size",
        "c": "ARC target size (arcstats c), between c_min and c_max",
        "c_min": "ARC minimum target size (zfs_arc_min)",
        "c_max": "ARC maximum size (zfs_arc_max)",
        "p": "MRU target size (arcstats p, OpenZFS < 2.2)",
        "meta": "Target fraction of the ARC for metadata (arcstats meta / 2^32, OpenZFS >= 2.2)",
        "pd": "Target fraction of data in the MRU (arcstats pd / 2^32, OpenZFS >= 2.2)",
        "pm": "Target fraction of metadata in the MRU (arcstats pm / 2^32, OpenZFS >= 2.2)",
        "hits": "ARC hits",
        "misses": "ARC misses",
        "demand_data_hits": "ARC hits by demand reads of data",
        "demand_data_misses": "ARC misses by demand reads of data",
        "demand_metadata_hits": "ARC hits by demand reads of metadata",
        "demand_metadata_misses": "ARC misses by demand reads of metadata",
        "prefetch_data_hits": "ARC hits by prefetch reads of data",
        "prefetch_data_misses": "ARC misses by prefetch reads of data",
        "prefetch_metadata_hits": "ARC hits by prefetch reads of metadata",
        "prefetch_metadata_misses": "ARC misses by prefetch reads of metadata",
        "mru_hits": "ARC hits in the most-recently-used list",
        "mfu_hits": "ARC hits in the most-frequently-used list",
        "mru_ghost_hits": "Hits in the MRU ghost list (evicted too early: the ARC would have benefited from more MRU)",
        "mfu_ghost_hits": "Hits in the MFU ghost list (evicted too early: the ARC would have benefited from more MFU)",
        "compressed_size": "Compressed size of the data in the ARC",
        "uncompressed_size": "Uncompressed size of the data in the ARC",
        "overhead_size": "ARC bytes held in uncompressed form for active use",
        "data_size": "ARC bytes holding file data",
        "metadata_size": "ARC bytes holding metadata",
        "memory_throttle_count": "Times the ARC throttled writes for lack of memory",
        "memory_available_bytes": "Memory the ARC considers available",
        "arc_no_grow": "1 while the ARC may not grow (memory pressure)",
        "l2_hits": "L2ARC hits",
        "l2_misses": "L2ARC misses",
        "l2_size": "Uncompressed bytes stored in the L2ARC",
        "l2_asize": "Allocated (compressed) bytes on the L2ARC devices",
        "l2_read_bytes": "Bytes read from the L2ARC devices",
        "l2_write_bytes": "Bytes written to the L2ARC devices",
        "deleted": "Buffers evicted from the ARC",
        "evict_skip": "Eviction attempts skipped (buffer in use)",
    },
)


@collector("arc", after=None)
def collect(scrape: Scrape) -> Iterable[Metric]:
    return kstat_families(SPEC, scrape.host.arc)
