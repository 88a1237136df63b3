"""The ZFS module: its version and the parameters tuning depends on: /sys/module/zfs/parameters (zfs(4)).

One gauge per parameter, only for parameters this release has. Names:
`zfs_param_<parameter without its zfs_ prefix>` plus the base unit:
bytes -> `_bytes`, seconds -> `_seconds`, percent -> `_ratio` (value / 100,
`_percent`/`_pct` dropped from the name); counts and booleans keep the name.
HELP names the parameter itself.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric

from advisor.exporters.base import CACHED, Scrape
from advisor.exporters.registry import collector

_Q = ("sync_read", "sync_write", "async_read", "async_write", "scrub", "trim", "rebuild", "initializing", "removal")
# parameter -> unit: "bytes", "seconds", "percent" or "" (a count, a flag, a scale).
PARAMETERS: dict[str, str] = {
    # transaction groups and the write throttle (dirty data)
    "zfs_txg_timeout": "seconds",
    "zfs_txg_history": "",
    "zfs_dirty_data_max": "bytes",
    "zfs_dirty_data_max_max": "bytes",
    "zfs_dirty_data_max_percent": "percent",
    "zfs_dirty_data_max_max_percent": "percent",
    "zfs_dirty_data_sync_percent": "percent",
    "zfs_delay_min_dirty_percent": "percent",
    "zfs_delay_scale": "",
    "zfs_per_txg_dirty_frees_percent": "percent",
    "zfs_sync_taskq_batch_pct": "percent",
    # vdev queues
    "zfs_vdev_max_active": "",
    **{f"zfs_vdev_{q}_{m}_active": "" for q in _Q for m in ("min", "max")},
    "zfs_vdev_async_write_active_min_dirty_percent": "percent",
    "zfs_vdev_async_write_active_max_dirty_percent": "percent",
    "zfs_vdev_queue_depth_pct": "percent",
    "zfs_vdev_def_queue_depth": "",
    "zfs_vdev_nia_delay": "",
    "zfs_vdev_nia_credit": "",
    # aggregation
    "zfs_vdev_aggregation_limit": "bytes",
    "zfs_vdev_aggregation_limit_non_rotating": "bytes",
    "zfs_vdev_read_gap_limit": "bytes",
    "zfs_vdev_write_gap_limit": "bytes",
    "zfs_vdev_aggregate_trim": "",
    # mirror read balancing
    "zfs_vdev_mirror_rotating_inc": "",
    "zfs_vdev_mirror_rotating_seek_inc": "",
    "zfs_vdev_mirror_rotating_seek_offset": "bytes",
    "zfs_vdev_mirror_non_rotating_inc": "",
    "zfs_vdev_mirror_non_rotating_seek_inc": "",
    # ARC and L2ARC limits
    "zfs_arc_max": "bytes",
    "zfs_arc_min": "bytes",
    "zfs_arc_meta_limit": "bytes",
    "zfs_arc_meta_limit_percent": "percent",
    "zfs_arc_meta_balance": "",
    "zfs_arc_dnode_limit_percent": "percent",
    "zfs_arc_sys_free": "bytes",
    "zfs_compressed_arc_enabled": "",
    "l2arc_write_max": "bytes",
    "l2arc_write_boost": "bytes",
    "l2arc_headroom": "",
    "l2arc_noprefetch": "",
    # prefetch, ZIL, record sizes
    "zfs_prefetch_disable": "",
    "zfetch_max_distance": "bytes",
    "zfetch_max_streams": "",
    "zfs_immediate_write_sz": "bytes",
    "zil_slog_bulk": "bytes",
    "zfs_max_recordsize": "bytes",
    "zfs_special_class_metadata_reserve_pct": "percent",
    "zfs_abd_scatter_enabled": "",
    "zio_taskq_batch_pct": "percent",
}
_SUFFIX = {"bytes": "_bytes", "seconds": "_seconds", "percent": "_ratio", "": ""}
_UNIT_DOC = {"bytes": "bytes", "seconds": "seconds", "percent": "percent / 100", "": "as is"}


def metric_name(parameter: str, unit: str) -> str:
    base = parameter.removeprefix("zfs_")
    if unit == "percent":
        base = base.removesuffix("_percent").removesuffix("_pct")
    return f"zfs_param_{base}{_SUFFIX[unit]}"


@collector("module", after="disks", command_output_only=True)
def collect(scrape: Scrape) -> Iterable[Metric]:
    yield from _version(scrape)
    params = scrape.host.module_params
    for parameter, unit in PARAMETERS.items():
        raw = params.get(parameter)
        try:
            value = float(raw) if raw is not None else None
        except ValueError:
            continue
        if value is None:
            continue
        family = GaugeMetricFamily(
            metric_name(parameter, unit),
            f"ZFS module parameter {parameter} ({_UNIT_DOC[unit]}). Source: /sys/module/zfs/parameters/{parameter}."
            f"{CACHED}",
        )
        family.add_metric([], value / 100 if unit == "percent" else value)
        yield family


def _version(scrape: Scrape) -> Iterable[Metric]:
    zfs = scrape.host.zfs
    if not zfs.present:
        return ()
    info = InfoMetricFamily(
        "zfs_module",
        f"Loaded OpenZFS: kernel module and userland versions. Source: /sys/module/zfs/version, zfs version.{CACHED}",
    )
    info.add_metric([], {"version": zfs.kmod_version or "", "userland_version": zfs.userland_version or ""})
    return (info,)
