"""Facts about a pool's deduplication table (DDT): where it lives, how large it is, what RAM it asks for."""
from __future__ import annotations

from advisor.engine.catalogue import fact
from advisor.engine.context import Context

GIB = 1 << 30
TIB = 1 << 40
# zfsconcepts(7), Deduplication: "at least 1.25 GiB of RAM per 1 TiB of storage".
DEDUP_RAM_PER_TIB = 1.25 * GIB


@fact("pool.size_bytes", "bytes", "the pool's size (zpool get size)")
def pool_size_bytes(ctx: Context) -> int | None:
    return ctx.pool.size_bytes if ctx.pool else None


@fact("pool.dedup_ram_guide", "bytes", "RAM zfsconcepts(7) asks for with dedup: 1.25 GiB per TiB of pool size",
      needs=("pool.size_bytes",))
def pool_dedup_ram_guide(ctx: Context) -> int | None:
    size = ctx.get("pool.size_bytes")
    return None if size is None else int(size / TIB * DEDUP_RAM_PER_TIB)


@fact("pool.dedup_table_bytes", "bytes", "on-disk size of the dedup table (zpool get dedup_table_size, OpenZFS >= 2.3)")
def pool_dedup_table_bytes(ctx: Context) -> int | None:
    value = ctx.pool.properties.get("dedup_table_size") if ctx.pool else None
    return int(value) if value is not None and value.isdigit() else None


@fact("pool.ddt_vdev", "bool", "the pool has a vdev that holds the dedup table: a dedup vdev, or a special vdev "
      "while zfs_ddt_data_is_special=1 (the default)")
def pool_ddt_vdev(ctx: Context) -> bool | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    if ctx.pool.top_level_vdevs("dedup"):
        return True
    if not ctx.pool.top_level_vdevs("special"):
        return False
    on_special = ctx.host.module_param_int("zfs_ddt_data_is_special")
    return None if on_special is None else on_special != 0


@fact("zfs.dedup_table_controls", "str", "what this OpenZFS version offers to bound or shrink a dedup table")
def zfs_dedup_table_controls(ctx: Context) -> str | None:
    version = ctx.host.zfs.version_tuple
    if version is None:
        return None
    if tuple(version[:2]) >= (2, 3):
        return ("OpenZFS 2.3 can cap the table (zpool set dedup_table_quota) and prune old single-reference "
                "entries (zpool ddtprune); a pool with feature@fast_dedup enabled starts a new table in the "
                "smaller fast-dedup format, while a table that already exists keeps its legacy format")
    return ("this OpenZFS release can neither cap nor prune the table (dedup_table_quota, zpool ddtprune and "
            "fast dedup arrived in 2.3): it shrinks only as deduplicated blocks are freed or rewritten")
