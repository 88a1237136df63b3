"""Every source of host facts in one table: the name `Host.sources` and
`zfs_advisor_source_up{source}` give it, what it reads, and what of the Host it fills.

`host/collect.py` runs the per-pool commands from this table (`POOL_COMMANDS`): a new
command that says something per pool is its module (argv, parser, attach) and one line
here. The other sources need their own step in collect.py (pools are made from two
commands, datasets get their I/O from kstats read per scrape), but are named here too,
so that the fault suite (tests/fault/breaks.py), docs/reliability.md and the code
cannot list different sources.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from advisor.hostmodel.facts import PARAMS_DIR, Pool
from advisor.host import disks, system, zdb, zfs_props, zpool_iostat, zpool_props, zpool_status
from advisor.host.kstat import GLOBAL_KSTATS, KSTAT_DIR

POOL = "{pool}"  # in a name, a path or an argv: one source per pool, the pool's name here


@dataclass(frozen=True)
class Source:
    name: str  # "zdb:{pool}": one per pool; "kstat:{kstat}": one per file of GLOBAL_KSTATS
    fills: str  # what of the Host it becomes
    paths: tuple[str, ...] = ()  # the files or directories it reads
    commands: tuple[tuple[str, ...], ...] = ()  # its command, each form it takes (zpool status: text, JSON)
    # Per-pool commands run from this table: the output's part for each pool, put on the pool
    # (None when the output does not name the pool).
    parse: Callable[[str], dict[str, Any]] | None = None
    attach: Callable[[Pool, Any], None] | None = None
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
    Source(f"txgs:{POOL}", "Pool.txgs: the last transaction groups", paths=(f"{KSTAT_DIR}/{POOL}/txgs",)),
    Source(f"tx_assign:{POOL}", "Pool.tx_assign: how long writes waited for a txg",
           paths=(f"{KSTAT_DIR}/{POOL}/dmu_tx_assign",)),
    Source(f"pool_kstats:{POOL}", "Pool.kstat_state, Pool.iostats, Dataset.io",
           paths=(f"{KSTAT_DIR}/{POOL}/state", f"{KSTAT_DIR}/{POOL}/iostats", f"{KSTAT_DIR}/{POOL}/objset-*")),
)
POOL_COMMANDS: tuple[Source, ...] = tuple(s for s in SOURCES if s.attach is not None)


def source_names() -> tuple[str, ...]:
    """Every name a source reports under, `{pool}` standing for each pool's."""
    return tuple(n for s in SOURCES for n in s.names())


def source_of_command(argv: list[str] | tuple[str, ...]) -> str | None:
    """The source whose command `argv` is (per-pool names filled in), or None."""
    for source in SOURCES:
        for form in source.commands:
            if len(form) != len(argv):
                continue
            pool = [a for f, a in zip(form, argv) if f == POOL]
            if all(f == a or f == POOL for f, a in zip(form, argv)):
                return source.name.replace(POOL, pool[0]) if pool else source.name
    return None
