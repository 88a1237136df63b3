"""Typed, versioned facts about a host: the vocabulary of the whole project.

Sources (advisor/host/) produce these models, exporters turn them into
metrics, the engine turns them into recommendations. Every value is in base
units (bytes, seconds, ratios 0..1). A source that could not be read leaves
its part empty and says why in `Host.sources`; it never raises.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1
# The dataset names looked up with Host.dataset while `dataset_reads()` records them (in this
# thread's context): what a cached answer read of the datasets (advisor/engine/answer_cache.py).
_DATASET_READS: ContextVar[set[str] | None] = ContextVar("dataset_reads", default=None)
# Where a Host keeps its datasets by name: in its __dict__ beside the fields, which pydantic
# leaves out of dumps and comparisons.
_INDEX_KEY = "dataset_index"
# Where the ZFS module parameters are read (Host.module_params) and written: zfs(4).
PARAMS_DIR = "/sys/module/zfs/parameters"

_VERSION = re.compile(r"(?<!\d)(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?(?!\d)")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """'zfs-2.1.11-1', '2.3.2-1~bpo12+1', 'zfs-kmod-2.2.0' -> (2, 1, 11)."""
    if not text:
        return None
    m = _VERSION.search(text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


def fields_set(*names: str) -> set[str]:
    """A `_fields_set` for `model_construct()` that every instance built by one parser shares.

    Without it each instance gets a set of its own (216 bytes): 4 MB of identical sets for the
    datasets and their counters at 10,000 datasets. Facts are not modified once collected (a
    copy with changes is made with `model_copy`, which copies the set), so sharing is safe."""
    return set(names)


class SourceStatus(Model):
    """Whether one source of truth could be read; `reason` says why not."""

    ok: bool
    reason: str | None = None


class ZfsInfo(Model):
    present: bool
    reason: str | None = None
    kmod_version: str | None = None  # /sys/module/zfs/version, e.g. "2.1.11-1"
    userland_version: str | None = None  # `zfs version`, e.g. "zfs-2.1.11-1"

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        """(major, minor, patch) of the kernel module (what behaviour depends on)."""
        return parse_version(self.kmod_version or self.userland_version)


KStatValue = int | str


class KStat(Model):
    """A named kstat (/proc/spl/kstat/...): name -> integer or string."""

    values: dict[str, KStatValue] = Field(default_factory=dict)

    def int(self, name: str, default: int | None = None) -> int | None:
        value = self.values.get(name, default)
        return value if isinstance(value, int) else default


class Txg(Model):
    """One row of /proc/spl/kstat/zfs/<pool>/txgs (times in seconds)."""

    txg: int
    birth_seconds: float  # since boot
    state: Literal["open", "quiescing", "waiting", "syncing", "committed"]
    dirty_bytes: int
    read_bytes: int
    written_bytes: int
    reads: int
    writes: int
    open_seconds: float
    quiesce_seconds: float
    wait_seconds: float
    sync_seconds: float


class VdevIostat(Model):
    """`zpool iostat -vlq -Hp` for one vdev: averages since the pool was imported."""

    allocated_bytes: int | None = None
    free_bytes: int | None = None
    read_ops_per_second: float = 0
    write_ops_per_second: float = 0
    read_bytes_per_second: float = 0
    write_bytes_per_second: float = 0
    # Average latencies in seconds, by the column name of zpool-iostat(8) -l,
    # e.g. "total_wait_read", "disk_wait_write", "syncq_wait_read", "trim_wait".
    latency_seconds: dict[str, float | None] = Field(default_factory=dict)
    # Queue depths, e.g. "syncq_read_pend", "asyncq_write_activ" (zpool-iostat -q).
    queues: dict[str, int] = Field(default_factory=dict)


class Histogram(Model):
    """A histogram from `zpool iostat -w` or `-r`: per-bucket counts (not cumulative).

    `bounds` are the buckets' inclusive upper bounds in base units (seconds or
    bytes), ascending;
    `counts[name][i]` is the count in bucket i for series `name` (e.g.
    "total_wait_read", "ind_sync_read"). Values are since the pool was imported.
    """

    unit: Literal["seconds", "bytes"]
    bounds: list[float]
    counts: dict[str, list[int]]


VdevGroup = Literal["data", "log", "cache", "special", "dedup", "spare"]


class Vdev(Model):
    name: str
    type: str  # root, mirror, raidz1..3, draid*, disk, file, replacing, spare, ...
    group: VdevGroup = "data"
    state: str | None = None
    read_errors: int = 0
    write_errors: int = 0
    checksum_errors: int = 0
    path: str | None = None  # leaf device path as zpool reports it (-P -L)
    disk: str | None = None  # whole block device under /sys/block backing the leaf
    ashift: int | None = None  # top-level vdevs only
    nparity: int | None = None
    children: list[Vdev] = Field(default_factory=list)
    iostat: VdevIostat | None = None

    @property
    def is_leaf(self) -> bool:
        return not self.children and self.type in ("disk", "file")

    def walk(self) -> Iterator[Vdev]:
        yield self
        for child in self.children:
            yield from child.walk()

    def leaves(self) -> list[Vdev]:
        return [v for v in self.walk() if v.is_leaf]


class ScanStatus(Model):
    function: Literal["scrub", "resilver", "none"] = "none"
    state: Literal["scanning", "finished", "canceled", "paused", "none"] = "none"
    errors: int = 0
    examined_bytes: int | None = None
    to_examine_bytes: int | None = None
    issued_bytes: int | None = None
    started: datetime | None = None
    ended: datetime | None = None

    @property
    def active(self) -> bool:
        return self.state in ("scanning", "paused")

    @property
    def progress_ratio(self) -> float | None:
        """Issued / to-examine bytes while a scan runs; 1.0 once it finished. A finished scan's
        counters keep the estimate taken when it started, and issued stays below it (0.78-0.8 on
        the lab's pools), which a dashboard would show as a scrub that never completed."""
        if self.state == "finished":
            return 1.0
        if not self.to_examine_bytes or self.issued_bytes is None:
            return None
        return min(1.0, self.issued_bytes / self.to_examine_bytes)


class Pool(Model):
    name: str
    health: str
    guid: str | None = None
    size_bytes: int | None = None
    allocated_bytes: int | None = None
    free_bytes: int | None = None
    fragmentation_ratio: float | None = None
    capacity_ratio: float | None = None
    dedup_ratio: float | None = None
    readonly: bool = False
    ashift: int | None = None  # the pool property (0 = auto); per-vdev ashift is on Vdev
    properties: dict[str, str] = Field(default_factory=dict)
    root: Vdev | None = None
    scan: ScanStatus = Field(default_factory=ScanStatus)
    errors: str | None = None  # zpool status "errors:" line
    status: str | None = None  # zpool status "status:" paragraph, if any
    txgs: list[Txg] = Field(default_factory=list)
    # /proc/spl/kstat/zfs/<pool>/dmu_tx_assign: how long writes waited for a txg, since import (one
    # series, TX_ASSIGN_SERIES)
    tx_assign: Histogram | None = None
    kstat_state: str | None = None  # /proc/spl/kstat/zfs/<pool>/state
    iostats: KStat | None = None  # /proc/spl/kstat/zfs/<pool>/iostats (>= 2.1)
    import_age_seconds: float | None = None  # since the pool was imported: the age of the iostats kstat (>= 2.1)
    # zpool iostat -w / -r, by vdev name (the pool itself under its own name).
    latency_histograms: dict[str, Histogram] = Field(default_factory=dict)
    size_histograms: dict[str, Histogram] = Field(default_factory=dict)

    def vdevs(self) -> list[Vdev]:
        return list(self.root.walk()) if self.root else []

    def top_level_vdevs(self, group: VdevGroup | None = "data") -> list[Vdev]:
        if not self.root:
            return []
        return [v for v in self.root.children if group is None or v.group == group]

    def leaves(self) -> list[Vdev]:
        return self.root.leaves() if self.root else []


TX_ASSIGN_SERIES = "assign"  # the one series of Pool.tx_assign


class Property(Model):
    value: str
    source: str  # local, default, inherited from X, temporary, received, -


class Dataset(Model):
    name: str
    type: Literal["filesystem", "volume"]
    properties: dict[str, Property] = Field(default_factory=dict)
    # /proc/spl/kstat/zfs/<pool>/objset-0x..: writes, nwritten, reads, nread, ...
    io: KStat | None = None

    @property
    def pool(self) -> str:
        return self.name.split("/", 1)[0]

    def value(self, prop: str) -> str | None:
        p = self.properties.get(prop)
        return p.value if p else None

    def bytes_value(self, prop: str) -> int | None:
        v = self.value(prop)
        return int(v) if v is not None and v.isdigit() else None


@contextmanager
def dataset_reads() -> Iterator[set[str]]:
    """The names looked up with `Host.dataset` inside the block (in this thread)."""
    names: set[str] = set()
    token = _DATASET_READS.set(names)
    try:
        yield names
    finally:
        _DATASET_READS.reset(token)


class DiskStats(Model):
    """One line of /proc/diskstats (Documentation/admin-guide/iostats.rst)."""

    reads_completed: int
    reads_merged: int
    sectors_read: int
    read_seconds: float
    writes_completed: int
    writes_merged: int
    sectors_written: int
    write_seconds: float
    ios_in_progress: int
    io_seconds: float
    weighted_io_seconds: float
    discards_completed: int | None = None
    discards_merged: int | None = None
    sectors_discarded: int | None = None
    discard_seconds: float | None = None
    flushes_completed: int | None = None
    flush_seconds: float | None = None


class Disk(Model):
    """A whole block device under /sys/block."""

    name: str
    model: str | None = None
    vendor: str | None = None
    serial: str | None = None
    size_bytes: int | None = None
    logical_block_size: int | None = None
    physical_block_size: int | None = None
    rotational: bool | None = None
    nr_requests: int | None = None  # queue/nr_requests
    queue_depth: int | None = None  # device/queue_depth (SCSI/SATA)
    scheduler: str | None = None  # the active one, e.g. "none", "mq-deadline"
    partitions: list[str] = Field(default_factory=list)
    stats: DiskStats | None = None

    @property
    def media(self) -> Literal["ssd", "hdd", "unknown"]:
        if self.rotational is None:
            return "unknown"
        return "hdd" if self.rotational else "ssd"


class Host(Model):
    schema_version: int = SCHEMA_VERSION
    collected_at: datetime
    hostname: str | None = None
    kernel: str | None = None
    memory_bytes: int | None = None
    cpu_count: int | None = None
    zfs: ZfsInfo
    pools: list[Pool] = Field(default_factory=list)
    datasets: list[Dataset] = Field(default_factory=list)
    disks: list[Disk] = Field(default_factory=list)
    arc: KStat | None = None  # /proc/spl/kstat/zfs/arcstats
    # The other global kstats by file name: zil, dmu_tx, zfetchstats, abdstats,
    # dbufstats, vdev_mirror_stats.
    kstats: dict[str, KStat] = Field(default_factory=dict)
    module_params: dict[str, str] = Field(default_factory=dict)  # /sys/module/zfs/parameters
    sources: dict[str, SourceStatus] = Field(default_factory=dict)

    def pool(self, name: str) -> Pool | None:
        return next((p for p in self.pools if p.name == name), None)

    def dataset(self, name: str) -> Dataset | None:
        """O(1): the index is built at the first lookup, and again when `datasets` is another list
        or has grown (facts are not modified in place once collected: see `fields_set`)."""
        reads = _DATASET_READS.get()
        if reads is not None:
            reads.add(name)
        return self._datasets_by_name().get(name)

    def adopt_dataset_index(self, other: Host) -> None:
        """Take `other`'s index when it indexes this host's very list of datasets (a collection
        of the same command output): built once per command run, not per collection."""
        indexed = other.__dict__.get(_INDEX_KEY)
        if indexed is not None and indexed[0] is self.datasets and indexed[1] == len(self.datasets):
            self.__dict__[_INDEX_KEY] = indexed

    def _datasets_by_name(self) -> dict[str, Dataset]:
        indexed = self.__dict__.get(_INDEX_KEY)
        if indexed is None or indexed[0] is not self.datasets or indexed[1] != len(self.datasets):
            by_name: dict[str, Dataset] = {}
            for d in self.datasets:
                by_name.setdefault(d.name, d)  # the first of a name, as a scan finds it
            indexed = (self.datasets, len(self.datasets), by_name)
            self.__dict__[_INDEX_KEY] = indexed  # not a field: pydantic leaves it out of dumps and ==
        return indexed[2]

    def disk(self, name: str) -> Disk | None:
        return next((d for d in self.disks if d.name == name), None)

    def module_param_int(self, name: str) -> int | None:
        value = self.module_params.get(name)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def pool_disks(self, pool: Pool) -> list[Disk]:
        """The block devices behind a pool's leaf vdevs, in vdev order."""
        names = [leaf.disk for leaf in pool.leaves() if leaf.disk]
        return [d for n in dict.fromkeys(names) if (d := self.disk(n))]
