"""The facts a rule may name: a flat catalogue of dotted names computed from `Host`.

Rules never see Python objects. They name facts from this catalogue
(`pool.ashift_min`, `dataset.recordsize`, `workload.sync`, `module.zfs_txg_timeout`)
and the loader refuses a rule that names anything else. Each fact has a type
(how rule constants are coerced and how values are printed) and a one-line
description (used in evidence and in docs/rules.md). A fact the host did not
report is None; a rule that needs it is reported as skipped, never guessed.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from advisor.facts import Dataset, Disk, Host, Pool, Vdev
from advisor.engine.units import format_size, parse_size

FactType = Literal["bytes", "int", "float", "ratio", "seconds", "bool", "str", "list"]
MODULE_PREFIX = "module."
_MODULE_PARAM = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
# Module parameters measured in bytes (zfs(4)); the rest are counts, seconds or flags.
_BYTE_PARAMS = frozenset(
    {"zfs_dirty_data_max", "zfs_dirty_data_max_max", "zfs_arc_max", "zfs_arc_min", "zfs_arc_meta_limit",
     "zfs_vdev_aggregation_limit", "zfs_vdev_aggregation_limit_non_rotating", "zfs_vdev_mirror_rotating_seek_offset",
     "zfs_max_recordsize", "zil_slog_bulk", "zfs_immediate_write_sz"}
)


@dataclass(frozen=True)
class FactDef:
    name: str
    type: FactType
    description: str
    compute: Callable[["Context"], Any]
    needs: tuple[str, ...] = ()  # facts a derived fact is computed from (to explain why it is unknown)


CATALOGUE: dict[str, FactDef] = {}


def fact(name: str, type_: FactType, description: str, needs: tuple[str, ...] = ()):
    def register(fn: Callable[["Context"], Any]) -> Callable[["Context"], Any]:
        CATALOGUE[name] = FactDef(name, type_, description, fn, needs)
        return fn

    return register


def fact_def(name: str) -> FactDef | None:
    """The definition of a fact name; `module.<param>` names any zfs module parameter."""
    if name in CATALOGUE:
        return CATALOGUE[name]
    if name.startswith(MODULE_PREFIX) and _MODULE_PARAM.match(name[len(MODULE_PREFIX) :]):
        param = name[len(MODULE_PREFIX) :]
        type_: FactType = "bytes" if param in _BYTE_PARAMS or param.endswith("_bytes") else "int"
        return FactDef(
            name, type_, f"zfs module parameter {param} (/sys/module/zfs/parameters/{param})", _module_param(param)
        )
    return None


def _module_param(param: str) -> Callable[["Context"], Any]:
    return lambda ctx: ctx.host.module_param_int(param)


def coerce(type_: FactType, value: Any) -> Any:
    """A rule constant converted to a fact's type ('32K' for bytes -> 32768); ValueError if it cannot be."""
    if value is None:
        return None
    if type_ == "bytes":
        return parse_size(value)
    if type_ == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
        return value
    if type_ in ("float", "ratio", "seconds"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number, got {value!r}")
        return float(value)
    if type_ == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if type_ == "str":
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {value!r}")
        return value
    if type_ == "list":
        if not isinstance(value, list):
            raise ValueError(f"expected a list, got {value!r}")
        return value
    raise ValueError(f"unknown fact type {type_}")  # pragma: no cover


def render(type_: FactType, value: Any) -> str:
    """A fact value as a person reads it (and as ZFS spells sizes)."""
    if value is None:
        return "unknown"
    if type_ == "bytes":
        return format_size(value)
    if type_ == "ratio":
        return f"{value * 100:.0f}%"
    if type_ == "seconds":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.1f} s"
    if type_ == "float":
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    if type_ == "bool":
        return "yes" if value else "no"
    if type_ == "list":
        return " ".join(map(str, value))
    return str(value)


@dataclass
class Context:
    """What one evaluation looks at: the host, one pool, one dataset, one workload."""

    host: Host
    workload: Any = None  # advisor.engine.schema.Workload (loose: schema imports this module)
    params: dict[str, str] = field(default_factory=dict)
    pool: Pool | None = None
    dataset: Dataset | None = None
    new_dataset: str | None = None  # the name proposed when no dataset was given
    _cache: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        if name not in self._cache:
            definition = fact_def(name)
            if definition is None:
                raise KeyError(f"unknown fact {name!r}")
            try:
                self._cache[name] = definition.compute(self)
            except (ValueError, ZeroDivisionError, TypeError):
                self._cache[name] = None
        return self._cache[name]

    def unknown_inputs(self, name: str) -> list[str]:
        """`name` and, for a derived fact, the unknown facts it is computed from."""
        definition = fact_def(name)
        names = [name]
        for need in definition.needs if definition else ():
            if self.get(need) is None:
                names += self.unknown_inputs(need)
        return names

    def rendered(self, name: str) -> str:
        definition = fact_def(name)
        return render(definition.type if definition else "str", self.get(name))

    # helpers for the fact functions
    def data_leaves(self) -> list[Vdev]:
        if not self.pool:
            return []
        return [leaf for top in self.pool.top_level_vdevs("data") for leaf in top.leaves()]

    def data_disks(self) -> list[Disk]:
        disks = [self.host.disk(leaf.disk) for leaf in self.data_leaves() if leaf.disk]
        unique = {d.name: d for d in disks if d is not None}
        return list(unique.values())

    def prop(self, name: str) -> str | None:
        return self.dataset.value(name) if self.dataset else None


# --- workload -----------------------------------------------------------------


@fact("workload.name", "str", "the workload asked for")
def _w_name(ctx: Context) -> str:
    return ctx.workload.name


@fact("workload.role", "str", "which of the workload's datasets this is (e.g. data or wal)")
def _w_role(ctx: Context) -> str | None:
    return ctx.params.get("role") or (ctx.workload.roles[0].name if ctx.workload.roles else None)


@fact("workload.page_size", "bytes", "the application's page or record size (workload parameter page_size)")
def _w_page(ctx: Context) -> int:
    return parse_size(ctx.params.get("page_size") or ctx.workload.io.block_size)


@fact("workload.block_size", "bytes", "typical I/O size of the workload")
def _w_block(ctx: Context) -> int:
    return parse_size(ctx.workload.io.block_size)


@fact("workload.pattern", "str", "random, sequential or mixed access")
def _w_pattern(ctx: Context) -> str:
    return ctx.workload.io.pattern


@fact("workload.sync", "str", "share of synchronous writes (fsync/O_DSYNC): none, light or heavy")
def _w_sync(ctx: Context) -> str:
    return ctx.workload.io.sync


@fact("workload.read_fraction", "ratio", "share of reads in the I/O mix")
def _w_read(ctx: Context) -> float:
    return ctx.workload.io.read_fraction


# --- host and module ----------------------------------------------------------


@fact("host.memory_bytes", "bytes", "physical memory (/proc/meminfo MemTotal)")
def _h_mem(ctx: Context) -> int | None:
    return ctx.host.memory_bytes


@fact("host.cpu_count", "int", "online CPUs")
def _h_cpu(ctx: Context) -> int | None:
    return ctx.host.cpu_count


@fact("zfs.version", "str", "OpenZFS kernel module version")
def _z_version(ctx: Context) -> str | None:
    v = ctx.host.zfs.version_tuple
    return ".".join(map(str, v)) if v else None


@fact("zfs.xattr_on_is_sa", "bool", "xattr=on means sa (OpenZFS >= 2.3), else it means dir")
def _z_xattr(ctx: Context) -> bool | None:
    v = ctx.host.zfs.version_tuple
    return None if v is None else tuple(v[:2]) >= (2, 3)


@fact("host.all_pools_ssd", "bool", "every imported pool is built only from non-rotating disks")
def _h_all_ssd(ctx: Context) -> bool | None:
    if not ctx.host.pools:
        return None
    media = [_pool_media(ctx.host, p) for p in ctx.host.pools]
    if "unknown" in media:
        return None
    return all(m == "ssd" for m in media)


@fact("host.physical_shift_max", "int", "log2 of the largest physical sector size of any disk")
def _h_phys(ctx: Context) -> int | None:
    sizes = [d.physical_block_size for d in ctx.host.disks if d.physical_block_size]
    return int(math.log2(max(sizes))) if sizes else None


@fact("host.dirty_data_max_default", "bytes", "the default zfs_dirty_data_max: 10% of RAM, at most 4 GiB")
def _h_dirty_default(ctx: Context) -> int | None:
    mem = ctx.host.memory_bytes
    return None if mem is None else min(mem // 10, 4 << 30)


@fact("host.dirty_data_max_max_default", "bytes", "the default cap zfs_dirty_data_max_max: 25% of RAM, at most 4 GiB")
def _h_dirty_cap(ctx: Context) -> int | None:
    mem = ctx.host.memory_bytes
    return None if mem is None else min(mem // 4, 4 << 30)


# --- pool ---------------------------------------------------------------------


def _pool_media(host: Host, pool: Pool) -> str:
    media = {
        (host.disk(leaf.disk).media if leaf.disk and host.disk(leaf.disk) else "unknown")
        for top in pool.top_level_vdevs("data")
        for leaf in top.leaves()
    }
    if not media or "unknown" in media:
        return "unknown"
    return media.pop() if len(media) == 1 else "mixed"


@fact("pool.name", "str", "pool name")
def _p_name(ctx: Context) -> str | None:
    return ctx.pool.name if ctx.pool else None


@fact("pool.media", "str", "media of the data vdevs' disks: ssd, hdd, mixed or unknown (sysfs queue/rotational)")
def _p_media(ctx: Context) -> str | None:
    return _pool_media(ctx.host, ctx.pool) if ctx.pool else None


@fact("pool.data_disks", "str", "the disks under the pool's data vdevs")
def _p_disks(ctx: Context) -> str | None:
    disks = ctx.data_disks()
    return ", ".join(d.name for d in disks) if disks else None


@fact("pool.physical_sector_max", "bytes", "largest physical sector size reported by a data disk")
def _p_phys(ctx: Context) -> int | None:
    sizes = [d.physical_block_size for d in ctx.data_disks() if d.physical_block_size]
    return max(sizes) if sizes else None


@fact("pool.physical_shift_max", "int", "log2 of the largest physical sector size of a data disk")
def _p_phys_shift(ctx: Context) -> int | None:
    size = ctx.get("pool.physical_sector_max")
    return int(math.log2(size)) if size else None


@fact("pool.ashift_min", "int", "smallest ashift of the pool's data vdevs (zdb -C)")
def _p_ashift(ctx: Context) -> int | None:
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
    worst = None
    for top in ctx.pool.top_level_vdevs("data") if ctx.pool else []:
        disks = [ctx.host.disk(leaf.disk) for leaf in top.leaves() if leaf.disk]
        sizes = [d.physical_block_size for d in disks if d and d.physical_block_size]
        if top.ashift is None or not sizes:
            continue
        needed = int(math.log2(max(sizes)))
        if worst is None or needed - top.ashift > worst[1] - worst[0].ashift:  # type: ignore[operator]
            worst = (top, needed, [d for d in disks if d])
    return worst


@fact("pool.vdev_ashift", "int", "ashift of the data vdev least aligned to its disks (zdb -C)")
def _p_vdev_ashift(ctx: Context) -> int | None:
    worst = _worst_aligned_vdev(ctx)
    return worst[0].ashift if worst else None


@fact("pool.vdev_physical_shift", "int", "log2 of the largest physical sector size of that vdev's disks")
def _p_vdev_needed(ctx: Context) -> int | None:
    worst = _worst_aligned_vdev(ctx)
    return worst[1] if worst else None


@fact("pool.vdev_sector_disks", "str", "that vdev and its disks' physical sector sizes")
def _p_vdev_disks(ctx: Context) -> str | None:
    worst = _worst_aligned_vdev(ctx)
    if not worst:
        return None
    return f"{worst[0].name}: " + _describe_sectors(worst[2])


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
def _p_sector_disks(ctx: Context) -> str | None:
    disks = [d for d in ctx.data_disks() if d.physical_block_size]
    return _describe_sectors(disks) if disks else None


@fact("pool.capacity_ratio", "ratio", "allocated share of the pool (zpool get capacity)")
def _p_cap(ctx: Context) -> float | None:
    return ctx.pool.capacity_ratio if ctx.pool else None


@fact("pool.fragmentation_ratio", "ratio", "free-space fragmentation (zpool get fragmentation)")
def _p_frag(ctx: Context) -> float | None:
    return ctx.pool.fragmentation_ratio if ctx.pool else None


@fact("pool.free_bytes", "bytes", "free space in the pool")
def _p_free(ctx: Context) -> int | None:
    return ctx.pool.free_bytes if ctx.pool else None


@fact("pool.has_slog", "bool", "the pool has a separate intent log (log vdev)")
def _p_slog(ctx: Context) -> bool | None:
    return bool(ctx.pool.top_level_vdevs("log")) if ctx.pool and ctx.pool.root else None


@fact("pool.has_special", "bool", "the pool has a special allocation class vdev")
def _p_special(ctx: Context) -> bool | None:
    return bool(ctx.pool.top_level_vdevs("special")) if ctx.pool and ctx.pool.root else None


@fact("pool.layout", "str", "the data vdevs, e.g. 'raidz1-0 (4 disks)' or '5 single-disk vdevs'")
def _p_layout(ctx: Context) -> str | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    tops = ctx.pool.top_level_vdevs("data")
    singles = [v for v in tops if v.type in ("disk", "file")]
    groups = [f"{v.name} ({len(v.leaves())} disks)" for v in tops if v.type not in ("disk", "file")]
    if singles:
        groups.append(f"{len(singles)} single-disk vdev{'s' if len(singles) > 1 else ''} (striped)")
    return ", ".join(groups)


@fact("pool.raidz_vdevs", "int", "number of raidz/draid data vdevs")
def _p_raidz(ctx: Context) -> int | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    return sum(1 for v in ctx.pool.top_level_vdevs("data") if v.type.startswith(("raidz", "draid")))


@fact("pool.raidz_max_width", "int", "disks in the widest raidz/draid vdev (0 without raidz)")
def _p_raidz_width(ctx: Context) -> int | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    widths = [len(v.leaves()) for v in ctx.pool.top_level_vdevs("data") if v.type.startswith(("raidz", "draid"))]
    return max(widths, default=0)


@fact("pool.data_vdevs", "int", "number of top-level data vdevs (IOPS scale with this)")
def _p_tops(ctx: Context) -> int | None:
    return len(ctx.pool.top_level_vdevs("data")) if ctx.pool and ctx.pool.root else None


@fact("pool.redundant", "bool", "every data vdev survives a disk failure (mirror, raidz or draid)")
def _p_redundant(ctx: Context) -> bool | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    tops = ctx.pool.top_level_vdevs("data")
    return bool(tops) and all(v.type == "mirror" or v.type.startswith(("raidz", "draid")) for v in tops)


@fact("pool.single_disk_vdevs", "int", "data vdevs that are a single disk (no redundancy)")
def _p_singles(ctx: Context) -> int | None:
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
def _p_mixed(ctx: Context) -> int | None:
    return len(_mixed_mirrors(ctx)) if ctx.pool and ctx.pool.root else None


@fact("pool.mixed_media_mirror_list", "str", "which mirrors mix media, and how")
def _p_mixed_list(ctx: Context) -> str | None:
    return "; ".join(_mixed_mirrors(ctx)) or None if ctx.pool else None


@fact("pool.vdev_spec", "list", "the data/log/special vdevs as zpool create arguments")
def _p_spec(ctx: Context) -> list[str] | None:
    if not ctx.pool or not ctx.pool.root:
        return None
    spec: list[str] = []
    for group in ("data", "special", "log", "cache", "spare"):
        tops = ctx.pool.top_level_vdevs(group)  # type: ignore[arg-type]
        if not tops:
            continue
        if group != "data":
            spec.append(group)
        for top in tops:
            if top.type in ("disk", "file"):
                spec.append(top.path or top.name)
            else:
                spec.append(re.sub(r"-\d+$", "", top.name) if top.type.startswith(("raidz", "mirror")) else top.type)
                spec += [leaf.path or leaf.name for leaf in top.leaves()]
    return spec


def _root_latency(ctx: Context, column: str) -> float | None:
    if not ctx.pool or not ctx.pool.root or not ctx.pool.root.iostat:
        return None
    return ctx.pool.root.iostat.latency_seconds.get(column)


@fact("pool.disk_wait_read", "seconds", "average time reads spent at the disks (zpool iostat -l disk_wait)")
def _p_dwr(ctx: Context) -> float | None:
    return _root_latency(ctx, "disk_wait_read")


@fact("pool.disk_wait_write", "seconds", "average time writes spent at the disks (zpool iostat -l disk_wait)")
def _p_dww(ctx: Context) -> float | None:
    return _root_latency(ctx, "disk_wait_write")


@fact("pool.asyncq_wait_write", "seconds", "average time async writes waited in ZFS's queue (zpool iostat -l)")
def _p_aqw(ctx: Context) -> float | None:
    return _root_latency(ctx, "asyncq_wait_write")


@fact("pool.write_ops_per_second", "float", "average write operations per second since import (zpool iostat)")
def _p_wops(ctx: Context) -> float | None:
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
def _p_txg_n(ctx: Context) -> int | None:
    return len(_busy_txgs(ctx)) if ctx.pool else None


@fact(
    "pool.txg_sync_bandwidth",
    "bytes",
    "bytes per second the pool wrote while syncing busy txgs (needs 3 or more; txgs kstat)",
    needs=("pool.txg_samples",),
)
def _p_txg_bw(ctx: Context) -> float | None:
    txgs = _busy_txgs(ctx)
    if len(txgs) < 3:
        return None
    return sum(t.written_bytes for t in txgs) / sum(t.sync_seconds for t in txgs)


@fact("pool.txg_sync_seconds_max", "seconds", "longest txg sync observed (txgs kstat)")
def _p_txg_max(ctx: Context) -> float | None:
    txgs = _busy_txgs(ctx)
    return max(t.sync_seconds for t in txgs) if txgs else None


@fact(
    "pool.txg_write_iops_max",
    "float",
    "highest write operations per second during a busy txg sync (needs 3 or more; txgs kstat)",
    needs=("pool.txg_samples",),
)
def _p_txg_iops(ctx: Context) -> float | None:
    txgs = [t for t in _busy_txgs(ctx) if t.writes > 0]
    if len(txgs) < 3:
        return None
    return max(t.writes / t.sync_seconds for t in txgs)


@fact(
    "pool.suggested_dirty_data_max",
    "bytes",
    "dirty data the pool can write in 2 x zfs_txg_timeout at its measured txg sync bandwidth",
    needs=("pool.txg_sync_bandwidth", "module.zfs_txg_timeout"),
)
def _p_dirty(ctx: Context) -> int | None:
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
def _p_delay(ctx: Context) -> int | None:
    iops = ctx.get("pool.txg_write_iops_max")
    return int(1e9 / iops) if iops else None


@fact("vdev_mirror.rotating_seek", "int", "mirror reads that paid the rotating seek penalty (vdev_mirror_stats)")
def _m_rot(ctx: Context) -> int | None:
    ks = ctx.host.kstats.get("vdev_mirror_stats")
    return ks.int("rotating_seek") if ks else None


@fact("vdev_mirror.non_rotating_seek", "int", "mirror reads sent to non-rotating children (vdev_mirror_stats)")
def _m_nonrot(ctx: Context) -> int | None:
    ks = ctx.host.kstats.get("vdev_mirror_stats")
    return ks.int("non_rotating_seek") if ks else None


# --- dataset ------------------------------------------------------------------


@fact("dataset.name", "str", "the dataset the advice is for")
def _d_name(ctx: Context) -> str | None:
    return ctx.new_dataset or (ctx.dataset.name if ctx.dataset else None)


@fact("dataset.type", "str", "filesystem or volume")
def _d_type(ctx: Context) -> str | None:
    if ctx.new_dataset:
        return ctx.workload.role(ctx.params.get("role")).dataset_type
    return ctx.dataset.type if ctx.dataset else None


@fact("dataset.exists", "bool", "the dataset exists (false: advice for a new dataset)")
def _d_exists(ctx: Context) -> bool:
    return ctx.new_dataset is None and ctx.dataset is not None


def _size_prop(name: str) -> Callable[[Context], int | None]:
    def compute(ctx: Context) -> int | None:
        value = ctx.prop(name)
        return parse_size(value) if value not in (None, "-", "") else None

    return compute


def _str_prop(name: str) -> Callable[[Context], str | None]:
    return lambda ctx: ctx.prop(name)


for _name in ("recordsize", "special_small_blocks", "logicalused"):
    fact(f"dataset.{_name}", "bytes", f"zfs property {_name}")(_size_prop(_name))


@fact("dataset.volblocksize", "bytes", "zfs property volblocksize (for a new zvol: the version's default)")
def _d_volblocksize(ctx: Context) -> int | None:
    if ctx.new_dataset and _d_type(ctx) == "volume":
        version = ctx.host.zfs.version_tuple
        if version is None:
            return None
        return 16384 if tuple(version[:2]) >= (2, 2) else 8192  # default changed in OpenZFS 2.2
    return _size_prop("volblocksize")(ctx)
for _name in ("primarycache", "logbias", "sync", "redundant_metadata", "atime", "relatime", "xattr", "dedup"):
    fact(f"dataset.{_name}", "str", f"zfs property {_name}")(_str_prop(_name))


@fact("dataset.compression", "str", "compression algorithm in effect ('on' resolved to lz4)")
def _d_comp(ctx: Context) -> str | None:
    value = ctx.prop("compression")
    return "lz4" if value == "on" else value


@fact("dataset.compressratio", "float", "achieved compression ratio (zfs get compressratio)")
def _d_ratio(ctx: Context) -> float | None:
    value = ctx.prop("compressratio")
    return float(value.rstrip("x")) if value and value not in ("-",) else None


@fact("dataset.atime_mode", "str", "access-time updates: off, relatime or on (every read writes)")
def _d_atime(ctx: Context) -> str | None:
    atime, relatime = ctx.prop("atime"), ctx.prop("relatime")
    if atime is None:
        return None
    if atime == "off":
        return "off"
    return "relatime" if relatime == "on" else "on"


@fact("dataset.xattr_style", "str", "how extended attributes are stored: sa, dir or off")
def _d_xattr(ctx: Context) -> str | None:
    value = ctx.prop("xattr")
    if value in (None, "-"):
        return None
    if value == "on":
        on_is_sa = ctx.get("zfs.xattr_on_is_sa")
        return None if on_is_sa is None else ("sa" if on_is_sa else "dir")
    return value
