"""Facts about the workload asked for, the host and its zfs module parameters."""
from __future__ import annotations

import math

from advisor.engine.catalogue import fact
from advisor.engine.context import Context
from advisor.engine.units import parse_size

# --- workload -----------------------------------------------------------------


# Every workload fact is unknown in a general answer (no workload asked for): the engine gives
# that answer only from rules that read none of them (Rule.workload_independent).


@fact("workload.name", "str", "the workload asked for")
def workload_name(ctx: Context) -> str | None:
    return ctx.workload.name if ctx.workload else None


@fact("workload.role", "str", "which of the workload's datasets this is (e.g. data or wal)")
def workload_role(ctx: Context) -> str | None:
    if ctx.workload is None:
        return None
    return ctx.params.get("role") or (ctx.workload.roles[0].name if ctx.workload.roles else None)


@fact("workload.page_size", "bytes", "the application's page or record size (workload parameter page_size)")
def workload_page_size(ctx: Context) -> int | None:
    return parse_size(ctx.params.get("page_size") or ctx.workload.io.block_size) if ctx.workload else None


@fact("workload.block_size", "bytes", "typical I/O size of the workload")
def workload_block_size(ctx: Context) -> int | None:
    return parse_size(ctx.workload.io.block_size) if ctx.workload else None


@fact("workload.pattern", "str", "random, sequential or mixed access")
def workload_pattern(ctx: Context) -> str | None:
    return ctx.workload.io.pattern if ctx.workload else None


@fact("workload.sync", "str", "share of synchronous writes (fsync/O_DSYNC): none, light or heavy")
def workload_sync(ctx: Context) -> str | None:
    return ctx.workload.io.sync if ctx.workload else None


@fact("workload.read_fraction", "ratio", "share of reads in the I/O mix")
def workload_read_fraction(ctx: Context) -> float | None:
    return ctx.workload.io.read_fraction if ctx.workload else None


# --- host and module ----------------------------------------------------------


@fact("host.memory_bytes", "bytes", "physical memory (/proc/meminfo MemTotal)")
def host_memory_bytes(ctx: Context) -> int | None:
    return ctx.host.memory_bytes


@fact("host.cpu_count", "int", "online CPUs")
def host_cpu_count(ctx: Context) -> int | None:
    return ctx.host.cpu_count


@fact("zfs.version", "str", "OpenZFS kernel module version")
def zfs_version(ctx: Context) -> str | None:
    v = ctx.host.zfs.version_tuple
    return ".".join(map(str, v)) if v else None


@fact("zfs.xattr_on_is_sa", "bool", "xattr=on means sa (OpenZFS >= 2.3), else it means dir")
def zfs_xattr_on_is_sa(ctx: Context) -> bool | None:
    v = ctx.host.zfs.version_tuple
    return None if v is None else tuple(v[:2]) >= (2, 3)


@fact("host.physical_shift_max", "int", "log2 of the largest physical sector size of any disk")
def host_physical_shift_max(ctx: Context) -> int | None:
    sizes = [d.physical_block_size for d in ctx.host.disks if d.physical_block_size]
    return int(math.log2(max(sizes))) if sizes else None


@fact("host.dirty_data_max_default", "bytes", "the default zfs_dirty_data_max: 10% of RAM, at most 4 GiB")
def host_dirty_data_max_default(ctx: Context) -> int | None:
    mem = ctx.host.memory_bytes
    return None if mem is None else min(mem // 10, 4 << 30)


@fact("host.dirty_data_max_max_default", "bytes", "the default cap zfs_dirty_data_max_max: 25% of RAM, at most 4 GiB")
def host_dirty_data_max_max_default(ctx: Context) -> int | None:
    mem = ctx.host.memory_bytes
    return None if mem is None else min(mem // 4, 4 << 30)


@fact(
    "host.dirty_data_delays",
    "int",
    "transactions the write throttle delayed since the zfs module loaded, all pools: dirty data above "
    "zfs_delay_min_dirty_percent of zfs_dirty_data_max (dmu_tx kstat, dmu_tx_dirty_delay)",
)
def host_dirty_data_delays(ctx: Context) -> int | None:
    # The only sign in a single reading that writes outran the pool: txg and iostat figures show what
    # the load asked for, this shows that dirty data piled up until writers were made to wait.
    ks = ctx.host.kstats.get("dmu_tx")
    return ks.int("dmu_tx_dirty_delay") if ks else None
