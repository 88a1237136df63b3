"""Every source of host facts in one table: the name `Host.sources` and
`zfs_advisor_source_up{source}` give it, what it reads, and what of the Host it fills.

`host/collect.py` runs the per-pool sources from this table: the commands (`POOL_COMMANDS`,
run with the others) and the files (`POOL_FILES`, read at each collection with the kstats). A
new source that says something per pool is its module (argv and parser, or path and reader; and
`attach`, which puts its part on the pool) and one line here. The other sources have their own
step in collect.py (pools are made from two commands, datasets get their I/O from the objset
kstats), but are named here too, so that the fault suite (tests/fault/breaks.py),
docs/reliability.md and the code cannot list different sources.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.host import (
    disks,
    pool_iostats,
    system,
    tx_assign,
    txgs,
    zdb,
    zfs_props,
    zpool_iostat,
    zpool_props,
    zpool_status,
)
from advisor.host.files import HostFiles
from advisor.host.kstat import GLOBAL_KSTATS, KSTAT_DIR
from advisor.hostmodel.facts import PARAMS_DIR, Pool

POOL = "{pool}"  # in a name, a path or an argv: one source per pool, the pool's name here


@dataclass(frozen=True)
class Source:
    name: str  # "zdb:{pool}": one per pool; "kstat:{kstat}": one per file of GLOBAL_KSTATS
    fills: str  # what of the Host it becomes
    paths: tuple[str, ...] = ()  # the files or directories it reads
    commands: tuple[tuple[str, ...], ...] = ()  # its command, each form it takes (zpool status: text, JSON)
    # Per-pool sources run from this table: a command's `parse` (its output -> each pool's part)
    # or a file's `read` (the files and a pool's name -> the pool's part; OSError or ParseError when
    # not readable), and `attach`, which puts the part on the pool (None when there is none).
    parse: Callable[[str], dict[str, Any]] | None = None
    read: Callable[[HostFiles, str], Any] | None = None
    attach: Callable[[Pool, Any], None] | None = None
    absent: str | None = None  # why a per-pool file may not be there: its part is then None, the source up
    only_failures: bool = False  # reported only when it fails (a host's sources stay the same set)

    def names(self) -> tuple[str, ...]:
        """The names it reports under (`kstat:{kstat}` is one per global kstat); `{pool}` left in."""
        if "{kstat}" in self.name:
            return tuple(self.name.replace("{kstat}", k) for k in GLOBAL_KSTATS)
        return (self.name,)


SOURCES: tuple[Source, ...] = (
    # no zfs module loaded (every ZFS source below is then left out)
    Source("zfs", "Host.zfs: the module's presence and version", paths=("/sys/module/zfs", KSTAT_DIR),
           only_failures=True),
    # a hostname or kernel release that is not a name (left out)
    Source("hostname", "Host.hostname, Host.kernel", paths=(system.HOSTNAME, system.OSRELEASE), only_failures=True),
    Source("disks", "Host.disks: each block device, its model, rotational flag and sector sizes",
           paths=(disks.SYS_BLOCK,)),
    Source("diskstats", "Disk.stats: each block device's I/O counters", paths=(disks.DISKSTATS,)),
    Source("meminfo", "Host.memory_bytes", paths=(system.MEMINFO,)),
    Source("cpus_online", "Host.cpu_count", paths=(system.CPUS_ONLINE,)),
    Source("module_params", "Host.module_params: the zfs module's parameters", paths=(PARAMS_DIR,)),
    Source("kstat:arcstats", "Host.arc", paths=(f"{KSTAT_DIR}/arcstats",)),
    Source("kstat:{kstat}", "Host.kstats", paths=tuple(f"{KSTAT_DIR}/{k}" for k in GLOBAL_KSTATS)),
    Source("zpool_get", "Host.pools: each pool and its properties", commands=(zpool_props.ZPOOL_GET_ARGV,)),
    Source("zpool_status", "Pool.root (the vdev tree), scan, errors, status",
           commands=(zpool_status.STATUS_TEXT_ARGV, zpool_status.STATUS_JSON_ARGV)),
    Source("zfs_get", "Host.datasets and their properties", commands=(zfs_props.zfs_get_argv(),)),
    Source("zpool_iostat", "Vdev.iostat: latencies and queues since import",
           commands=(zpool_iostat.IOSTAT_ARGV,),
           parse=zpool_iostat.parse_vdev_iostat, attach=zpool_iostat.attach_vdev_iostat),
    Source("zpool_iostat_latency", "Pool.latency_histograms", commands=(zpool_iostat.LATENCY_HISTOGRAM_ARGV,),
           parse=zpool_iostat.parse_latency_histograms, attach=zpool_iostat.attach_latency_histograms),
    Source("zpool_iostat_size", "Pool.size_histograms", commands=(zpool_iostat.SIZE_HISTOGRAM_ARGV,),
           parse=zpool_iostat.parse_size_histograms, attach=zpool_iostat.attach_size_histograms),
    Source(f"zdb:{POOL}", "Vdev.ashift of each top-level vdev", commands=(zdb.zdb_config_argv(POOL),)),
    Source(f"txgs:{POOL}", "Pool.txgs: the last transaction groups", paths=(txgs.txgs_path(POOL),),
           read=txgs.txgs_of, attach=txgs.attach_txgs),
    Source(f"tx_assign:{POOL}", "Pool.tx_assign: how long writes waited for a txg",
           paths=(tx_assign.tx_assign_path(POOL),), read=tx_assign.read_tx_assign, attach=tx_assign.attach_tx_assign,
           absent="the recordings made before the advisor read it"),
    Source(f"pool_iostats:{POOL}", "Pool.iostats, Pool.import_age_seconds: I/O counters since import, and how long ago",
           paths=(pool_iostats.iostats_path(POOL),), read=pool_iostats.read_iostats, attach=pool_iostats.attach_iostats,
           absent="OpenZFS before 2.1 has no iostats kstat"),
    Source(f"pool_kstats:{POOL}", "Pool.kstat_state, Dataset.io",
           paths=(f"{KSTAT_DIR}/{POOL}/state", f"{KSTAT_DIR}/{POOL}/objset-*")),
)
POOL_COMMANDS: tuple[Source, ...] = tuple(s for s in SOURCES if s.parse is not None)
POOL_FILES: tuple[Source, ...] = tuple(s for s in SOURCES if s.read is not None)


def source_names() -> tuple[str, ...]:
    """Every name a source reports under, `{pool}` standing for each pool's."""
    return tuple(n for s in SOURCES for n in s.names())


def source_of_path(path: str) -> str | None:
    """The source that reads the file `path` (a pool's name filled in), or None: matched against the
    table's files (`{pool}` one path component, `*` any part of one), not its directories."""
    for source in SOURCES:
        names = source.names()  # one per path for `kstat:{kstat}`
        for i, pattern in enumerate(source.paths):
            name = names[i] if len(names) == len(source.paths) else source.name
            if m := _path_pattern(pattern).fullmatch(path):
                return name.replace(POOL, m["pool"]) if POOL in pattern else name
    return None


def _path_pattern(pattern: str) -> re.Pattern[str]:
    parts = (re.escape(p).replace(r"\*", "[^/]*") for p in pattern.split(POOL))
    return re.compile("(?P<pool>[^/]+)".join(parts))


def source_of_command(argv: list[str] | tuple[str, ...]) -> str | None:
    """The source whose command `argv` is (per-pool names filled in), or None."""
    for source in SOURCES:
        for form in source.commands:
            if len(form) != len(argv):
                continue
            pool = [a for f, a in zip(form, argv, strict=True) if f == POOL]  # lengths checked above
            if all(f in (a, POOL) for f, a in zip(form, argv, strict=True)):
                return source.name.replace(POOL, pool[0]) if pool else source.name
    return None
