"""Facts about the ARC and the L2ARC (arcstats), and the cache an application keeps beside them."""
from __future__ import annotations

from advisor.engine.catalogue import fact
from advisor.engine.context import Context

GIB = 1 << 30
ARC_MAX_FLOOR = 64 << 20  # zfs(4): zfs_arc_max must be at least 64 MiB
ARC_MAX_STEP = 128 << 20


def _arcstat(ctx: Context, name: str) -> int | None:
    return ctx.host.arc.int(name) if ctx.host.arc else None


def _share(part: int | None, whole: int | None) -> float | None:
    return None if part is None or not whole else part / whole


# --- ARC size ---------------------------------------------------------------------------------


@fact("arc.c_max", "bytes", "the ARC's maximum size in effect (arcstats c_max: zfs_arc_max, or the default)")
def arc_c_max(ctx: Context) -> int | None:
    return _arcstat(ctx, "c_max")


@fact("arc.size", "bytes", "the ARC's current size (arcstats size)")
def arc_size(ctx: Context) -> int | None:
    return _arcstat(ctx, "size")


@fact("arc.max_share_of_ram", "ratio", "the ARC's maximum as a share of RAM (arcstats c_max / MemTotal)",
      needs=("arc.c_max", "host.memory_bytes"))
def arc_max_share_of_ram(ctx: Context) -> float | None:
    return _share(ctx.get("arc.c_max"), ctx.get("host.memory_bytes"))


@fact("host.memory_beside_arc_default", "bytes", "RAM OpenZFS 2.3's default ARC maximum leaves to the rest of the "
      "system: RAM minus max(5/8 of RAM, RAM - 1 GiB)", needs=("host.memory_bytes",))
def host_memory_beside_arc_default(ctx: Context) -> int | None:
    mem = ctx.get("host.memory_bytes")
    return None if mem is None else mem - max(mem * 5 // 8, mem - GIB)


# --- the application's own cache --------------------------------------------------------------


def innodb_dedicated_share(memory: int) -> float:
    """The buffer pool innodb_dedicated_server sizes for `memory` (MySQL manual, "Enabling Automatic
    InnoDB Configuration for a Dedicated MySQL Server"), as a share of it."""
    if memory < GIB:
        return min(1.0, (128 << 20) / memory)
    return 0.5 if memory <= 4 * GIB else 0.75


@fact("workload.cache_share", "ratio", "the application's own cache as a share of RAM (workload parameter "
      "cache_percent; `dedicated`: what innodb_dedicated_server chooses)")
def workload_cache_share(ctx: Context) -> float | None:
    percent = ctx.params.get("cache_percent") if ctx.workload else None
    if percent == "dedicated":
        mem = ctx.get("host.memory_bytes")
        return None if not mem else innodb_dedicated_share(mem)
    return None if percent is None else int(percent) / 100


@fact("workload.cache_bytes", "bytes", "the application's own cache: its share of RAM (cache_percent) in bytes",
      needs=("workload.cache_share", "host.memory_bytes"))
def workload_cache_bytes(ctx: Context) -> int | None:
    share, mem = ctx.get("workload.cache_share"), ctx.get("host.memory_bytes")
    return None if share is None or mem is None else int(mem * share)


@fact("host.arc_max_beside_app_cache", "bytes", "the largest ARC that fits beside the application's cache and the "
      "room OpenZFS's default leaves the rest of the system: RAM - cache - that room, in steps of 128 MiB, "
      "at least 64 MiB",
      needs=("host.memory_bytes", "workload.cache_bytes"))
def host_arc_max_beside_app_cache(ctx: Context) -> int | None:
    mem, cache, rest = ctx.get("host.memory_bytes"), ctx.get("workload.cache_bytes"), ctx.get("host.memory_beside_arc_default")
    if mem is None or cache is None or rest is None:
        return None
    room = (mem - cache - rest) // ARC_MAX_STEP * ARC_MAX_STEP  # a round value to write down
    return max(ARC_MAX_FLOOR, room)


# --- L2ARC ------------------------------------------------------------------------------------


@fact("arc.l2_lookups", "int", "ARC misses of pools with cache devices, looked up in the L2ARC (arcstats l2_hits + l2_misses)")
def arc_l2_lookups(ctx: Context) -> int | None:
    hits, misses = _arcstat(ctx, "l2_hits"), _arcstat(ctx, "l2_misses")
    return None if hits is None or misses is None else hits + misses


@fact("arc.l2_hit_ratio", "ratio", "share of those lookups the L2ARC answered (arcstats l2_hits / (l2_hits + l2_misses))",
      needs=("arc.l2_lookups",))
def arc_l2_hit_ratio(ctx: Context) -> float | None:
    return _share(_arcstat(ctx, "l2_hits"), ctx.get("arc.l2_lookups"))


@fact("arc.l2_hdr_bytes", "bytes", "RAM the ARC spends on headers of blocks held in the L2ARC (arcstats l2_hdr_size)")
def arc_l2_hdr_bytes(ctx: Context) -> int | None:
    return _arcstat(ctx, "l2_hdr_size")


@fact("arc.l2_hdr_share", "ratio", "those headers as a share of the ARC's size (l2_hdr_size / size)",
      needs=("arc.l2_hdr_bytes", "arc.size"))
def arc_l2_hdr_share(ctx: Context) -> float | None:
    return _share(ctx.get("arc.l2_hdr_bytes"), ctx.get("arc.size"))


@fact("arc.l2_asize", "bytes", "data held on the cache devices, as allocated there (arcstats l2_asize)")
def arc_l2_asize(ctx: Context) -> int | None:
    return _arcstat(ctx, "l2_asize")
