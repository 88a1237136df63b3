"""Facts of the I/O one pool shows: latencies (zpool iostat -l), the txg history and mirror read stats.

Derived suggestions (dirty data, delay scale) need enough busy transaction
groups; with too few they are unknown and the rules that use them are skipped.
"""
from __future__ import annotations

from advisor.engine.catalogue import fact
from advisor.engine.context import Context


def _root_latency(ctx: Context, column: str) -> float | None:
    if not ctx.pool or not ctx.pool.root or not ctx.pool.root.iostat:
        return None
    return ctx.pool.root.iostat.latency_seconds.get(column)


@fact("pool.disk_wait_read", "seconds", "average time reads spent at the disks (zpool iostat -l disk_wait)")
def pool_disk_wait_read(ctx: Context) -> float | None:
    return _root_latency(ctx, "disk_wait_read")


@fact("pool.disk_wait_write", "seconds", "average time writes spent at the disks (zpool iostat -l disk_wait)")
def pool_disk_wait_write(ctx: Context) -> float | None:
    return _root_latency(ctx, "disk_wait_write")


@fact("pool.asyncq_wait_write", "seconds", "average time async writes waited in ZFS's queue (zpool iostat -l)")
def pool_asyncq_wait_write(ctx: Context) -> float | None:
    return _root_latency(ctx, "asyncq_wait_write")


@fact("pool.write_ops_per_second", "float", "average write operations per second since import (zpool iostat)")
def pool_write_ops_per_second(ctx: Context) -> float | None:
    if not ctx.pool or not ctx.pool.root or not ctx.pool.root.iostat:
        return None
    return ctx.pool.root.iostat.write_ops_per_second


# A txg tells what the pool can write only when it was busy: enough data that
# the sync was bounded by the disks, not by fixed per-txg overhead.
BUSY_TXG_MIN_BYTES = 8 << 20
BUSY_TXG_MIN_SECONDS = 0.25


def _busy_txgs(ctx: Context) -> list:
    if not ctx.pool:
        return []
    return [
        t
        for t in ctx.pool.txgs
        if t.state == "committed" and t.written_bytes >= BUSY_TXG_MIN_BYTES and t.sync_seconds >= BUSY_TXG_MIN_SECONDS
    ]


@fact("pool.txg_samples", "int", "busy transaction groups (>= 8 MiB written, >= 0.25 s sync) in the txgs kstat")
def pool_txg_samples(ctx: Context) -> int | None:
    return len(_busy_txgs(ctx)) if ctx.pool else None


@fact(
    "pool.txg_sync_bandwidth",
    "bytes",
    "bytes per second the pool wrote while syncing busy txgs (needs 3 or more; txgs kstat)",
    needs=("pool.txg_samples",),
)
def pool_txg_sync_bandwidth(ctx: Context) -> float | None:
    txgs = _busy_txgs(ctx)
    if len(txgs) < 3:
        return None
    return sum(t.written_bytes for t in txgs) / sum(t.sync_seconds for t in txgs)


@fact("pool.txg_sync_seconds_max", "seconds", "longest txg sync observed (txgs kstat)")
def pool_txg_sync_seconds_max(ctx: Context) -> float | None:
    txgs = _busy_txgs(ctx)
    return max(t.sync_seconds for t in txgs) if txgs else None


@fact(
    "pool.txg_write_iops_max",
    "float",
    "highest write operations per second during a busy txg sync (needs 3 or more; txgs kstat)",
    needs=("pool.txg_samples",),
)
def pool_txg_write_iops_max(ctx: Context) -> float | None:
    txgs = [t for t in _busy_txgs(ctx) if t.writes > 0]
    if len(txgs) < 3:
        return None
    return max(t.writes / t.sync_seconds for t in txgs)


@fact(
    "pool.dirty_peak_ratio",
    "ratio",
    "largest dirty data of any recorded txg, as a share of zfs_dirty_data_max (txgs kstat)",
    needs=("module.zfs_dirty_data_max",),
)
def pool_dirty_peak_ratio(ctx: Context) -> float | None:
    limit = ctx.host.module_param_int("zfs_dirty_data_max")
    txgs = [t for t in ctx.pool.txgs if t.state == "committed"] if ctx.pool else []
    if not limit or not txgs:
        return None
    return max(t.dirty_bytes for t in txgs) / limit


@fact(
    "pool.suggested_dirty_data_max",
    "bytes",
    "dirty data the pool can write in 2 x zfs_txg_timeout at its measured txg sync bandwidth",
    needs=("pool.txg_sync_bandwidth", "module.zfs_txg_timeout"),
)
def pool_suggested_dirty_data_max(ctx: Context) -> int | None:
    bandwidth = ctx.get("pool.txg_sync_bandwidth")
    timeout = ctx.host.module_param_int("zfs_txg_timeout")
    if bandwidth is None or not timeout:
        return None
    mib = 1 << 20
    return max(64 * mib, int(bandwidth * 2 * timeout) // mib * mib)


@fact(
    "pool.suggested_delay_scale",
    "int",
    "1e9 / the highest measured write IOPS (zfs(4) zfs_delay_scale)",
    needs=("pool.txg_write_iops_max",),
)
def pool_suggested_delay_scale(ctx: Context) -> int | None:
    iops = ctx.get("pool.txg_write_iops_max")
    return int(1e9 / iops) if iops else None


@fact("vdev_mirror.rotating_seek", "int", "mirror reads that paid the rotating seek penalty (vdev_mirror_stats)")
def vdev_mirror_rotating_seek(ctx: Context) -> int | None:
    ks = ctx.host.kstats.get("vdev_mirror_stats")
    return ks.int("rotating_seek") if ks else None


@fact("vdev_mirror.non_rotating_seek", "int", "mirror reads sent to non-rotating children (vdev_mirror_stats)")
def vdev_mirror_non_rotating_seek(ctx: Context) -> int | None:
    ks = ctx.host.kstats.get("vdev_mirror_stats")
    return ks.int("non_rotating_seek") if ks else None
