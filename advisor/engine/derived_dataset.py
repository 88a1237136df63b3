"""Facts about one dataset (or the new dataset proposed when none was given)."""
from __future__ import annotations

from collections.abc import Callable

from advisor.engine.catalogue import fact
from advisor.engine.context import Context
from advisor.engine.units import parse_size

# --- dataset ------------------------------------------------------------------


@fact("dataset.name", "str", "the dataset the advice is for")
def dataset_name(ctx: Context) -> str | None:
    return ctx.new_dataset or (ctx.dataset.name if ctx.dataset else None)


@fact("dataset.type", "str", "filesystem or volume")
def dataset_type(ctx: Context) -> str | None:
    if ctx.new_dataset and ctx.workload:  # a new dataset is proposed for a workload only
        return ctx.workload.role(ctx.params.get("role")).dataset_type
    return ctx.dataset.type if ctx.dataset else None


@fact("dataset.exists", "bool", "the dataset exists (false: advice for a new dataset)")
def dataset_exists(ctx: Context) -> bool:
    return ctx.new_dataset is None and ctx.dataset is not None


def _size_prop(name: str) -> Callable[[Context], int | None]:
    def compute(ctx: Context) -> int | None:
        value = ctx.prop(name)
        return parse_size(value) if value not in (None, "-", "") else None

    return compute


def _str_prop(name: str) -> Callable[[Context], str | None]:
    return lambda ctx: ctx.prop(name)


for _name in ("recordsize", "special_small_blocks"):
    fact(f"dataset.{_name}", "bytes", f"zfs property {_name}")(_size_prop(_name))


@fact("dataset.logicalused", "bytes", "data written before compression (zfs property logicalused; 0 for a new dataset)")
def dataset_logicalused(ctx: Context) -> int | None:
    return 0 if ctx.new_dataset else _size_prop("logicalused")(ctx)


@fact("dataset.volblocksize", "bytes", "zfs property volblocksize (for a new zvol: the version's default)")
def dataset_volblocksize(ctx: Context) -> int | None:
    if ctx.new_dataset and dataset_type(ctx) == "volume":
        version = ctx.host.zfs.version_tuple
        if version is None:
            return None
        return 16384 if tuple(version[:2]) >= (2, 2) else 8192  # default changed in OpenZFS 2.2
    return _size_prop("volblocksize")(ctx)
for _name in ("primarycache", "logbias", "sync", "redundant_metadata", "atime", "relatime", "xattr", "dedup", "checksum"):
    fact(f"dataset.{_name}", "str", f"zfs property {_name}")(_str_prop(_name))


@fact("dataset.compression", "str", "compression algorithm in effect ('on' resolved to lz4)")
def dataset_compression(ctx: Context) -> str | None:
    value = ctx.prop("compression")
    return "lz4" if value == "on" else value


@fact("dataset.compressratio", "float", "achieved compression ratio (zfs get compressratio)")
def dataset_compressratio(ctx: Context) -> float | None:
    if ctx.new_dataset:
        return None  # nothing written yet: the pool root's ratio says nothing about this data
    value = ctx.prop("compressratio")
    return float(value.rstrip("x")) if value and value not in ("-",) else None


@fact("dataset.atime_mode", "str", "access-time updates: off, relatime or on (every read writes)")
def dataset_atime_mode(ctx: Context) -> str | None:
    atime, relatime = ctx.prop("atime"), ctx.prop("relatime")
    if atime is None:
        return None
    if atime == "off":
        return "off"
    return "relatime" if relatime == "on" else "on"


@fact("dataset.xattr_style", "str", "how extended attributes are stored: sa, dir or off")
def dataset_xattr_style(ctx: Context) -> str | None:
    value = ctx.prop("xattr")
    if value in (None, "-"):
        return None
    if value == "on":
        on_is_sa = ctx.get("zfs.xattr_on_is_sa")
        return None if on_is_sa is None else ("sa" if on_is_sa else "dir")
    return value
