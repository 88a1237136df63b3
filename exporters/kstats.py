"""Global ZFS kstats besides the ARC: ZIL, dmu_tx (write throttle), zfetch, ABD, dbuf, mirror.

Sources, all under /proc/spl/kstat/zfs/: `zil` (ZIL commits and itx counts),
`dmu_tx` (transaction assignment, and the write-throttle delays: dirty_delay,
dirty_over_max, ...), `zfetchstats` (prefetcher), `abdstats` (ABD buffers),
`dbufstats` (dbuf cache), `vdev_mirror_stats` (mirror read selection).
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import Metric

from advisor.exporters.base import Scrape
from advisor.exporters.named import KStatSpec, kstat_families
from advisor.exporters.registry import collector

_DIR = "/proc/spl/kstat/zfs"
# ZIL fields in bytes: *_bytes, and (OpenZFS >= 2.2) the bytes of log blocks written and allocated,
# *_write and *_alloc (zil.h: bytes <= write <= alloc), named so that the unit comes last.
ZIL_BYTES = r".*_(bytes|write|alloc)"


def zil_names(prefix: str) -> dict[str, str]:
    """zil_itx_metaslab_<class>_write/_alloc -> ..._written/_allocated (+ _bytes), `prefix` kept or dropped."""
    return {f"zil_itx_metaslab_{c}_{field}": f"{prefix}itx_metaslab_{c}_{name}"
            for c in ("normal", "slog") for field, name in (("write", "written"), ("alloc", "allocated"))}


SPECS = {
    "zil": KStatSpec(
        prefix="zfs_zil",
        path=f"{_DIR}/zil",
        strip="zil_",
        bytes=ZIL_BYTES,
        names=zil_names(""),
        help={
            "zil_commit_count": "zil_commit() calls (synchronous write requests: fsync, O_SYNC, sync=always)",
            "zil_commit_writer_count": "ZIL commits that wrote log blocks",
            "zil_itx_count": "ZIL intent-log transactions created",
            "zil_itx_indirect_count": "ZIL transactions written indirectly (data in the pool, logbias=throughput)",
            "zil_itx_indirect_bytes": "Bytes of ZIL transactions written indirectly",
            "zil_itx_copied_count": "ZIL transactions with data copied into the log",
            "zil_itx_copied_bytes": "Bytes copied into ZIL transactions",
            "zil_itx_metaslab_slog_count": "ZIL blocks written to a separate log device (SLOG)",
            "zil_itx_metaslab_slog_bytes": "Bytes of ZIL blocks written to a separate log device (SLOG)",
            "zil_itx_metaslab_normal_count": "ZIL blocks written to the main pool (no SLOG)",
            "zil_itx_metaslab_normal_bytes": "Bytes of ZIL blocks written to the main pool (no SLOG)",
        },
    ),
    "dmu_tx": KStatSpec(
        prefix="zfs_dmu_tx",
        path=f"{_DIR}/dmu_tx",
        strip="dmu_tx_",
        help={
            "dmu_tx_assigned": "Transactions assigned to a txg",
            "dmu_tx_delay": "Transactions delayed",
            "dmu_tx_error": "Transactions that failed to be assigned",
            "dmu_tx_suspended": "Transactions that waited because the pool was suspended",
            "dmu_tx_group": "Transactions that waited for the next txg (txg full)",
            "dmu_tx_memory_reserve": "Transactions that waited for ARC memory reservation",
            "dmu_tx_memory_reclaim": "Transactions that waited for ARC memory reclaim",
            "dmu_tx_dirty_throttle": "Transactions that waited for dirty data to drain (write throttle)",
            "dmu_tx_dirty_delay": "Transactions delayed by the write throttle (dirty over zfs_delay_min_dirty_percent)",
            "dmu_tx_dirty_over_max": "Transactions that waited because dirty data exceeded zfs_dirty_data_max",
            "dmu_tx_dirty_frees_delay": "Transactions delayed by too many frees in a txg",
            "dmu_tx_quota": "Transactions that failed on quota",
        },
    ),
    "zfetchstats": KStatSpec(
        prefix="zfs_zfetch",
        path=f"{_DIR}/zfetchstats",
        gauges=r"io_active",
        help={
            "hits": "Prefetcher stream hits (reads that matched a prefetch stream)",
            "misses": "Prefetcher stream misses",
            "max_streams": "Prefetch stream creations refused: zfetch_max_streams reached",
        },
    ),
    "abdstats": KStatSpec(
        prefix="zfs_abd",
        path=f"{_DIR}/abdstats",
        gauges=r"(?!scatter_page_|scatter_sg_table_retry).*",
        bytes=r".*_size|scatter_chunk_waste",
        names={"linear_cnt": "linear_buffers", "scatter_cnt": "scatter_buffers"},
        # abd_os.c counts each order's compound pages up on allocation and down on free: a level
        split=((r"scatter_order_(?P<order>\d+)", "scatter_chunks"),),
        help={
            "linear_cnt": "Linear ABDs allocated now",
            "scatter_cnt": "Scatter ABDs allocated now",
            "scatter_chunks": "Chunks (compound pages of 2^order pages) held by scatter ABDs now, by order",
        },
    ),
    "dbufstats": KStatSpec(
        prefix="zfs_dbuf",
        path=f"{_DIR}/dbufstats",
        gauges=r"(?!cache_total_evicts|hash_(hits|misses|collisions|insert_race)|metadata_cache_overflow).*",
        bytes=r".*bytes.*",
        names={"cache_size_bytes_max": "cache_size_max_bytes",
               "metadata_cache_size_bytes_max": "metadata_cache_size_max_bytes"},
        split=((r"cache_level_(?P<level>\d+)", "cache_level_entries"),
               (r"cache_level_(?P<level>\d+)_bytes", "cache_level_bytes")),
        help={
            "cache_level_entries": "dbufs in the dbuf cache, by indirection level (0: data blocks)",
            "cache_level_bytes": "Bytes of the dbufs in the dbuf cache, by indirection level (0: data blocks)",
            "cache_size_bytes_max": "Largest size the dbuf cache has had",
            "metadata_cache_size_bytes_max": "Largest size the dbuf metadata cache has had",
        },
    ),
    "vdev_mirror_stats": KStatSpec(
        prefix="zfs_vdev_mirror",
        path=f"{_DIR}/vdev_mirror_stats",
        help={
            "rotating_linear": "Mirror reads sent to a rotating child whose last I/O was adjacent",
            "rotating_offset": "Mirror reads sent to a rotating child within the seek offset",
            "rotating_seek": "Mirror reads sent to a rotating child that needed a seek",
            "non_rotating_linear": "Mirror reads sent to a non-rotating child whose last I/O was adjacent",
            "non_rotating_seek": "Mirror reads sent to a non-rotating child not adjacent",
            "preferred_found": "Mirror reads that found a preferred child",
            "preferred_not_found": "Mirror reads that found no preferred child",
        },
    ),
}


@collector("kstats", after="arc")
def collect(scrape: Scrape) -> Iterable[Metric]:
    for name, spec in SPECS.items():
        yield from kstat_families(spec, scrape.host.kstats.get(name))
