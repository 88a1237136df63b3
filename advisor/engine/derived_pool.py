"""Facts about one pool: layout, media, alignment and space."""
from __future__ import annotations

import math
import re

from advisor.engine.catalogue import fact
from advisor.engine.context import Context
from advisor.hostmodel.facts import Disk, Host, Pool, Vdev

# --- pool ---------------------------------------------------------------------


def pool_media(host: Host, pool: Pool) -> str:
    media = {_leaf_media(host, leaf) for top in pool.top_level_vdevs("data") for leaf in top.leaves()}
    if not media or "unknown" in media:
        return "unknown"
    return media.pop() if len(media) == 1 else "mixed"


def _leaf_media(host: Host, leaf: Vdev) -> str:
    disk = host.disk(leaf.disk) if leaf.disk else None
    return disk.media if disk else "unknown"


@fact("pool.name", "str", "pool name")
def pool_name(ctx: Context) -> str | None:
    return ctx.pool.name if ctx.pool else None


@fact("pool.health", "str", "pool state (zpool get health): ONLINE, DEGRADED, FAULTED, OFFLINE, REMOVED or UNAVAIL")
def pool_health(ctx: Context) -> str | None:
    # UNKNOWN: zpool get printed no state it knows, or one zpool cannot print (no advice on it)
    return ctx.pool.health if ctx.pool and ctx.pool.health != "UNKNOWN" else None


@fact("pool.media", "str", "media of the data vdevs' disks: ssd, hdd, mixed or unknown (sysfs queue/rotational)")
def pool_media_fact(ctx: Context) -> str | None:
    return pool_media(ctx.host, ctx.pool) if ctx.pool else None


@fact("pool.data_disks", "str", "the disks under the pool's data vdevs")
def pool_data_disks(ctx: Context) -> str | None:
    disks = ctx.data_disks()
    return ", ".join(d.name for d in disks) if disks else None


@fact("pool.physical_sector_max", "bytes", "largest physical sector size reported by a data disk")
def pool_physical_sector_max(ctx: Context) -> int | None:
    sizes = [d.physical_block_size for d in ctx.data_disks() if d.physical_block_size]
    return max(sizes) if sizes else None


@fact("pool.physical_shift_max", "int", "log2 of the largest physical sector size of a data disk")
def pool_physical_shift_max(ctx: Context) -> int | None:
    size = ctx.get("pool.physical_sector_max")
    return int(math.log2(size)) if size else None


@fact("pool.ashift_min", "int", "smallest ashift of the pool's data vdevs (zdb -C)")
def pool_ashift_min(ctx: Context) -> int | None:
    if not ctx.pool:
        return None
    shifts = [v.ashift for v in ctx.pool.top_level_vdevs("data") if v.ashift]
    if shifts:
        return min(shifts)
    return ctx.pool.ashift or None  # property 0 means auto: unknown here


def _worst_aligned_vdev(ctx: Context) -> tuple[Vdev, int, list[Disk]] | None:
    """The data vdev whose ashift falls furthest short of its own disks' physical sectors.

    Checked per top-level vdev: a pool may hold a 512-byte vdev (ashift=9, fine)
    next to a 4K one (ashift=12); only a vdev smaller than its own disks misaligns.
    """
    if not ctx.pool:
        return None
    worst = None
    for top in ctx.pool.top_level_vdevs("data"):
        disks = [ctx.host.disk(leaf.disk) for leaf in top.leaves() if leaf.disk]
        sizes = [d.physical_block_size for d in disks if d and d.physical_block_size]
        ashift = _vdev_ashift(ctx.pool, top)
        if ashift is None or not sizes:
            continue
        needed = int(math.log2(max(sizes)))
        if worst is None or needed - ashift > worst[1] - worst[3]:
            worst = (top, needed, [d for d in disks if d], ashift)
    return worst[:3] if worst else None


def _vdev_ashift(pool: Pool, top: Vdev) -> int | None:
    """The vdev's ashift from zdb -C; failing that, a forced pool ashift property (-o ashift=N),
    which every vdev created while it was set received."""
    if top.ashift is not None:
        return top.ashift
    return pool.ashift or None


@fact("pool.vdev_ashift", "int", "ashift of the data vdev least aligned to its disks (zdb -C, else a forced pool ashift)")
def pool_vdev_ashift(ctx: Context) -> int | None:
    worst = _worst_aligned_vdev(ctx)
    return _vdev_ashift(ctx.pool, worst[0]) if worst and ctx.pool else None


@fact("pool.vdev_physical_shift", "int", "log2 of the largest physical sector size of that vdev's disks")
def pool_vdev_physical_shift(ctx: Context) -> int | None:
    worst = _worst_aligned_vdev(ctx)
    return worst[1] if worst else None


@fact("pool.misaligned_vdev", "str", "name of the data vdev least aligned to its disks")
def pool_misaligned_vdev(ctx: Context) -> str | None:
    worst = _worst_aligned_vdev(ctx)
    return worst[0].name if worst else None


@fact("pool.vdev_sector_disks", "str", "that vdev's disks and their physical sector sizes")
def pool_vdev_sector_disks(ctx: Context) -> str | None:
    worst = _worst_aligned_vdev(ctx)
    if not worst:
        return None
    return _describe_sectors(worst[2])


def _describe_sectors(disks: list[Disk]) -> str:
    by_size: dict[int, list[str]] = {}
    for d in disks:
        if d.physical_block_size:
            by_size.setdefault(d.physical_block_size, []).append(d.name)
    parts = [
        f"{', '.join(names)} {'reports' if len(names) == 1 else 'report'} {size}-byte"
        for size, names in sorted(by_size.items())
    ]
    return "; ".join(parts) + " physical sectors"


@fact("pool.sector_disks", "str", "data disks and their physical sector sizes")
def pool_sector_disks(ctx: Context) -> str | None:
    disks = [d for d in ctx.data_disks() if d.physical_block_size]
    return _describe_sectors(disks) if disks else None


@fact("pool.capacity_ratio", "ratio", "allocated share of the pool (zpool get capacity)")
def pool_capacity_ratio(ctx: Context) -> float | None:
    return ctx.pool.capacity_ratio if ctx.pool else None


@fact("pool.fragmentation_ratio", "ratio", "free-space fragmentation (zpool get fragmentation)")
def pool_fragmentation_ratio(ctx: Context) -> float | None:
    return ctx.pool.fragmentation_ratio if ctx.pool else None


@fact("pool.free_bytes", "bytes", "free space in the pool")
def pool_free_bytes(ctx: Context) -> int | None:
    return ctx.pool.free_bytes if ctx.pool else None


@fact("pool.has_slog", "bool", "the pool has a separate intent log (log vdev)")
def pool_has_slog(ctx: Context) -> bool | None:
    return bool(ctx.pool.top_level_vdevs("log")) if ctx.pool and ctx.pool.root else None


@fact("pool.has_special", "bool", "the pool has a special allocation class vdev")
def pool_has_special(ctx: Context) -> bool | None:
    return bool(ctx.pool.top_level_vdevs("special")) if ctx.pool and ctx.pool.root else None


@fact("pool.has_cache", "bool", "the pool has cache devices (L2ARC)")
def pool_has_cache(ctx: Context) -> bool | None:
    return bool(ctx.pool.top_level_vdevs("cache")) if ctx.pool and ctx.pool.root else None


@fact("pool.layout", "str", "the data vdevs, e.g. 'raidz1-0 (4 disks)' or '5 single-disk vdevs'")
def pool_layout(ctx: Context) -> str | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    tops = ctx.pool.top_level_vdevs("data")
    singles = [v for v in tops if v.type in ("disk", "file")]
    groups = [f"{v.name} ({len(v.leaves())} disks)" for v in tops if v.type not in ("disk", "file")]
    if singles:
        groups.append(f"{len(singles)} single-disk vdev{'s' if len(singles) > 1 else ''} (striped)")
    return ", ".join(groups)


@fact("pool.raidz_vdevs", "int", "number of raidz/draid data vdevs")
def pool_raidz_vdevs(ctx: Context) -> int | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    return sum(1 for v in ctx.pool.top_level_vdevs("data") if v.type.startswith(("raidz", "draid")))


@fact("pool.raidz_max_width", "int", "disks in the widest raidz/draid vdev (0 without raidz)")
def pool_raidz_max_width(ctx: Context) -> int | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    widths = [len(v.leaves()) for v in ctx.pool.top_level_vdevs("data") if v.type.startswith(("raidz", "draid"))]
    return max(widths, default=0)


@fact("pool.data_vdevs", "int", "number of top-level data vdevs (IOPS scale with this)")
def pool_data_vdevs(ctx: Context) -> int | None:
    return len(ctx.pool.top_level_vdevs("data")) if ctx.pool and ctx.pool.root else None


@fact("pool.redundant", "bool", "every data vdev survives a disk failure (mirror, raidz or draid)")
def pool_redundant(ctx: Context) -> bool | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    tops = ctx.pool.top_level_vdevs("data")
    return bool(tops) and all(v.type == "mirror" or v.type.startswith(("raidz", "draid")) for v in tops)


@fact("pool.single_disk_vdevs", "int", "data vdevs that are a single disk (no redundancy)")
def pool_single_disk_vdevs(ctx: Context) -> int | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    return sum(1 for v in ctx.pool.top_level_vdevs("data") if v.type in ("disk", "file"))


def _mixed_mirrors(ctx: Context) -> list[str]:
    found = []
    for top in ctx.pool.top_level_vdevs("data") if ctx.pool else []:
        if top.type != "mirror":
            continue
        kinds = []
        for leaf in top.leaves():
            disk = ctx.host.disk(leaf.disk) if leaf.disk else None
            kinds.append((disk.name if disk else leaf.name, disk.media if disk else "unknown"))
        if len({m for _, m in kinds} - {"unknown"}) > 1:
            found.append(f"{top.name} pairs " + " with ".join(f"{n} ({m})" for n, m in kinds))
    return found


@fact("pool.mixed_media_mirrors", "int", "mirrors whose children mix SSDs and HDDs")
def pool_mixed_media_mirrors(ctx: Context) -> int | None:
    return len(_mixed_mirrors(ctx)) if ctx.pool and ctx.pool.root else None


@fact("pool.mixed_media_mirror_list", "str", "which mirrors mix media, and how")
def pool_mixed_media_mirror_list(ctx: Context) -> str | None:
    return "; ".join(_mixed_mirrors(ctx)) or None if ctx.pool else None


@fact("pool.vdev_spec", "list", "the data/log/special vdevs as zpool create arguments")
def pool_vdev_spec(ctx: Context) -> list[str] | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    spec: list[str] = []
    for group in ("data", "special", "log", "cache", "spare"):
        tops = ctx.pool.top_level_vdevs(group)
        if not tops:
            continue
        if group != "data":
            spec.append(group)
        for top in tops:
            if top.type in ("disk", "file"):
                spec.append(_device(ctx.host, top))
            else:
                spec.append(re.sub(r"-\d+$", "", top.name) if top.type.startswith(("raidz", "mirror")) else top.type)
                spec += [_device(ctx.host, leaf) for leaf in top.leaves()]
    return spec


def _device(host: Host, leaf: Vdev) -> str:
    """The device to name in `zpool create`: the whole disk when ZFS partitioned it itself.

    Given a whole disk, ZFS writes partition 1 (data) and 9 (8 MiB reserved); status
    then shows the partition, but re-creating on /dev/sda1 would lose the whole-disk
    handling (partitioning, alignment), so name /dev/sda again.
    """
    disk = host.disk(leaf.disk) if leaf.disk else None
    path = leaf.path or leaf.name
    if disk is not None and path.startswith("/dev/"):
        sep = "p" if disk.name[-1].isdigit() else ""  # nvme0n1p1, sda1
        if sorted(disk.partitions) == [f"{disk.name}{sep}1", f"{disk.name}{sep}9"]:
            return f"/dev/{disk.name}"
    return path
