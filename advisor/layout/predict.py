"""What a candidate layout should give, from what its disks give (pure; docs/planner.md).

Per top-level vdev, summed over the vdevs (ZFS spreads writes over them):

* sequential read: the disks that hold data, each at its read rate: a disk 1, a mirror of n
  n (ZFS reads from every side), raidz-p of n n - p, dRAID the data share of its non-spare disks;
* sequential write: a mirror writes every copy (1 disk's worth); raidz and dRAID write parity
  and padding beside the data: the disks' rate times the data share of a `recordsize` block
  (`vdev_raidz_asize()`, `vdev_draid_asize()`), n - p disks for large blocks;
* random reads of `block`-sized blocks (a recordsize of that size): a mirror serves a read from
  any side (n disks); raidz and dRAID read only a block's data columns, so a block that spans
  the stripe keeps every data disk of the vdev busy (about one disk's IOPS per vdev) and a
  block of one sector costs one disk. A raidz vdev's busiest disk bounds it: blocks start on a
  subset of the disks (advisor/layout/raidz_reads.py), over the whole pool, and within one
  metaslab (the data of a new pool, or a region read hot) on fewer still for some widths;
* random writes: every copy (mirror: 1 disk per vdev); raidz writes the data columns and the
  parity (one disk's IOPS per vdev for a block that spans the stripe); dRAID writes whole rows;
* fault tolerance: n - 1 disks of a mirror, p of raidz or dRAID, none of a plain disk; any that
  many in the pool, and at most their sum when each vdev loses its own.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from advisor.layout.layouts import Candidate, candidates
from advisor.layout.raidz_reads import busiest_share
from advisor.layout.space import Vdev, block_asize, data_capacity, pool_space


class DiskSpec(BaseModel):
    """The disks a layout is planned for: all alike, the pool gets them whole."""
    count: int = Field(ge=1, le=256)
    size_bytes: int = Field(gt=0)
    seq_read_bytes_per_second: float = Field(gt=0)
    seq_write_bytes_per_second: float = Field(gt=0)
    random_read_iops: float | None = Field(default=None, gt=0)
    random_write_iops: float | None = Field(default=None, gt=0)
    media: str = "unknown"
    logical_block_size: int = 512
    ashift: int = Field(default=12, ge=9, le=16)
    source: str = "given"  # "given", or where the numbers were measured


class LayoutPrediction(BaseModel):
    layout: str
    zpool_create: str
    vdevs: int
    raw_bytes: int = Field(description="zpool list SIZE of the new pool (parity included)")
    usable_bytes: int = Field(description="zfs list USED + AVAIL of the new pool")
    data_bytes: int = Field(description="uncompressed data of recordsize blocks that fits")
    seq_read_bytes_per_second: float
    seq_write_bytes_per_second: float
    random_read_iops: float | None
    random_read_iops_one_metaslab: float | None = Field(
        default=None, description="random reads of data in one metaslab of each top-level vdev, as a new pool "
                                   "holds its first data (raidz: blocks start on fewer of its disks there)")
    random_write_iops: float | None
    fault_tolerance_any: int = Field(description="disks that may fail, whichever they are")
    fault_tolerance_best: int = Field(description="disks that may fail when each vdev loses its own")
    distributed_spares: int = 0


class PlanResponse(BaseModel):
    disks: DiskSpec
    recordsize_bytes: int
    random_block_bytes: int
    layouts: list[LayoutPrediction]
    method: str = "docs/planner.md"
    references: list[str]


REFERENCES = [
    "https://www.delphix.com/blog/delphix-engineering/zfs-raidz-stripe-width-or-how-i-learned-stop-worrying-and-love-raidz",
    "https://openzfs.github.io/openzfs-docs/Basic%20Concepts/RAIDZ.html",
    "https://openzfs.github.io/openzfs-docs/Basic%20Concepts/dRAID%20Howto.html",
    "https://openzfs.github.io/openzfs-docs/man/master/7/zpoolconcepts.7.html",
    "https://openzfs.github.io/openzfs-docs/man/master/4/zfs.4.html",
    "https://github.com/openzfs/zfs/blob/zfs-2.3.2/module/zfs/vdev_raidz.c",
    "https://github.com/openzfs/zfs/blob/zfs-2.3.2/module/zfs/vdev_draid.c",
    "https://github.com/openzfs/zfs/blob/zfs-2.3.2/module/zfs/spa_misc.c",
]


def _data_disks(vdev: Vdev) -> float:
    """Disks' worth of data in a vdev's stripe (sequential reads)."""
    if vdev.type == "raidz":
        return vdev.width - vdev.nparity
    if vdev.type == "draid":
        return (vdev.width - vdev.nspares) * vdev.ndata / (vdev.ndata + vdev.nparity)
    return vdev.width  # a disk, or a mirror read from every side


def _members(vdev: Vdev) -> int:
    return vdev.width - vdev.nspares


def _write_disks(vdev: Vdev, recordsize: int, ashift: int) -> float:
    """Disks' worth of data a vdev writes per second of every member writing."""
    if vdev.type in ("raidz", "draid"):
        return _members(vdev) * recordsize / block_asize(vdev, recordsize, ashift)
    return 1.0


def _columns(vdev: Vdev, block: int, ashift: int) -> int:
    """Data columns a block occupies (raidz/dRAID)."""
    sectors = -(-block >> ashift)
    return min(sectors, vdev.ndata if vdev.type == "draid" else vdev.width - vdev.nparity)


def random_read_disks(vdev: Vdev, block: int, ashift: int, one_metaslab: bool = False) -> float:
    """Random reads of `block`-sized records a vdev serves per I/O its disks each serve: of data
    over the pool's metaslabs, or within one."""
    if vdev.type == "raidz":
        return 1.0 / busiest_share(vdev.width, vdev.nparity, ashift, block, one_metaslab)
    if vdev.type == "draid":
        return _members(vdev) / _columns(vdev, block, ashift)
    return vdev.width


def random_write_disks(vdev: Vdev, block: int, ashift: int) -> float:
    """Random writes of `block`-sized records a vdev takes per I/O its disks each take."""
    if vdev.type == "raidz":
        return vdev.width / (_columns(vdev, block, ashift) + vdev.nparity)
    if vdev.type == "draid":
        return _members(vdev) / (vdev.ndata + vdev.nparity)
    return 1.0


def _tolerance(vdev: Vdev) -> int:
    return {"disk": 0, "mirror": vdev.width - 1}.get(vdev.type, vdev.nparity)


def predict(candidate: Candidate, disks: DiskSpec, recordsize: int, block: int) -> LayoutPrediction:
    vdevs = list(candidate.vdevs)
    space = pool_space(vdevs, disks.size_bytes, disks.ashift, disks.logical_block_size)
    rr, rw = disks.random_read_iops, disks.random_write_iops
    return LayoutPrediction(
        layout=candidate.name, zpool_create=candidate.zpool_create(), vdevs=len(vdevs),
        raw_bytes=space.raw_bytes, usable_bytes=space.usable_bytes,
        data_bytes=data_capacity(space, vdevs, disks.ashift, recordsize),
        seq_read_bytes_per_second=sum(_data_disks(v) for v in vdevs) * disks.seq_read_bytes_per_second,
        seq_write_bytes_per_second=sum(_write_disks(v, recordsize, disks.ashift) for v in vdevs)
        * disks.seq_write_bytes_per_second,
        random_read_iops=None if rr is None else sum(random_read_disks(v, block, disks.ashift) for v in vdevs) * rr,
        random_read_iops_one_metaslab=None if rr is None else sum(
            random_read_disks(v, block, disks.ashift, one_metaslab=True) for v in vdevs) * rr,
        random_write_iops=None if rw is None else sum(random_write_disks(v, block, disks.ashift) for v in vdevs) * rw,
        fault_tolerance_any=min(_tolerance(v) for v in vdevs),
        fault_tolerance_best=sum(_tolerance(v) for v in vdevs),
        distributed_spares=sum(v.nspares for v in vdevs),
    )


def plan(disks: DiskSpec, recordsize: int = 128 << 10, block: int = 4 << 10) -> PlanResponse:
    """Every candidate for `disks`, most fault-tolerant first, then the most data space."""
    found = [predict(c, disks, recordsize, block) for c in candidates(disks.count)]
    found.sort(key=lambda p: (-p.fault_tolerance_any, -p.data_bytes, p.layout))
    return PlanResponse(disks=disks, recordsize_bytes=recordsize, random_block_bytes=block, layouts=found,
                        references=REFERENCES)
