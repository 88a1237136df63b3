"""Usable capacity of a layout, computed the way OpenZFS 2.3 does (pure arithmetic).

Each step names the function of openzfs/zfs (tag zfs-2.3.2) it follows:

* whole disk -> partition 1: `zpool_label_disk()` (lib/libzfs/os/linux/libzfs_pool_os.c): starts
  at block 2048, leaves EFI_MIN_RESV_SIZE (16384 blocks) for partition 9 at the end and rounds
  the partition down to 2048 blocks;
* partition -> leaf vdev: `vdev_open()` (module/zfs/vdev.c): rounded down to a label (256 KiB),
  less 4 MiB of labels and boot area at the start and 512 KiB of labels at the end;
* top-level vdev: the smallest child once (disk, mirror), times the width (raidz,
  `vdev_raidz_open()`), or per `vdev_draid_open()` (32 MiB reserved per child, rows of 16 MiB,
  whole groups);
* metaslabs: `vdev_metaslab_set_size()`; only whole metaslabs hold data, and from more than 64
  (`zfs_embedded_slog_min_ms`) one per vdev goes to the embedded log class, which `zpool list`
  SIZE counts (`spa_prop_get_config()`, module/zfs/spa.c) and `zfs list` does not;
* raidz/dRAID space is reported "deflated" by the cost of a 128 KiB block
  (`vdev_set_deflate_ratio()`), with `vdev_raidz_asize()` / `vdev_draid_asize()`: data sectors,
  parity per row, rounded up to nparity + 1 sectors (raidz) or to whole rows of the group (dRAID);
* slop space: `spa_get_slop_space()`, 1/32 of the pool (spa_slop_shift=5, zfs(4)), at least
  128 MiB (at most half the pool) and at most 128 GiB.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MiB = 1 << 20
LABEL_BYTES = 256 << 10  # sizeof (vdev_label_t)
LABEL_START_BYTES = 2 * LABEL_BYTES + (7 << 19)  # VDEV_LABEL_START_SIZE: two labels + 3.5 MiB boot area
LABEL_END_BYTES = 2 * LABEL_BYTES  # VDEV_LABEL_END_SIZE
NEW_START_BLOCK = 2048
PARTITION_END_ALIGNMENT = 2048
EFI_MIN_RESV_SIZE = 16384  # blocks
GPT_ENTRIES_BYTES = 128 * 128  # the GPT's partition entries, also kept at the disk's end

SPA_MINBLOCKSHIFT = 9
DEFLATE_BLOCK = 1 << 17  # SPA_OLD_MAXBLOCKSIZE
DRAID_ROWHEIGHT = 16 * MiB  # VDEV_DRAID_ROWHEIGHT (1 << SPA_MAXBLOCKSHIFT)
DRAID_REFLOW_RESERVE = 2 * DRAID_ROWHEIGHT

MS_DEFAULT_SHIFT, MS_MIN_COUNT, MS_DEFAULT_COUNT, MS_MAX_SHIFT, MS_COUNT_LIMIT = 29, 16, 200, 34, 1 << 17
SPA_MAXBLOCKSHIFT = 24
EMBEDDED_SLOG_MIN_MS = 64
SLOP_SHIFT, MIN_SLOP, MAX_SLOP = 5, 128 * MiB, 128 << 30

VdevType = Literal["disk", "mirror", "raidz", "draid"]


@dataclass(frozen=True)
class Vdev:
    """One top-level vdev: `width` disks; raidz/dRAID `nparity`; dRAID `ndata` per group and `nspares`."""
    type: VdevType
    width: int
    nparity: int = 0
    ndata: int = 0
    nspares: int = 0

    @property
    def name(self) -> str:
        if self.type == "raidz":
            return f"raidz{self.nparity}"
        if self.type == "draid":
            return f"draid{self.nparity}:{self.ndata}d:{self.width}c:{self.nspares}s"
        return self.type


def leaf_asize(disk_bytes: int, logical_block: int = 512, whole_disk: bool = True) -> int:
    """Allocatable bytes of one disk given whole to `zpool create` (or of a partition as given)."""
    psize = disk_bytes
    if whole_disk:
        blocks = disk_bytes // logical_block
        last_usable = blocks - 1 - 1 - -(-GPT_ENTRIES_BYTES // logical_block)  # backup header and entries
        slice_blocks = last_usable + 1 - EFI_MIN_RESV_SIZE - NEW_START_BLOCK
        psize = (slice_blocks // PARTITION_END_ALIGNMENT * PARTITION_END_ALIGNMENT) * logical_block
    osize = psize // LABEL_BYTES * LABEL_BYTES
    return max(0, osize - LABEL_START_BYTES - LABEL_END_BYTES)


def raidz_asize(psize: int, ashift: int, width: int, nparity: int) -> int:
    """Bytes a block of `psize` takes on a raidz vdev: `vdev_raidz_asize()`."""
    sectors = ((psize - 1) >> ashift) + 1
    sectors += nparity * ((sectors + width - nparity - 1) // (width - nparity))
    return -(-sectors // (nparity + 1)) * (nparity + 1) << ashift


def draid_asize(psize: int, ashift: int, ndata: int, nparity: int) -> int:
    """Bytes a block takes on dRAID: whole rows of the group, `vdev_draid_asize()`."""
    rows = (psize - 1) // (ndata << ashift) + 1
    return (rows * (ndata + nparity)) << ashift


def block_asize(vdev: Vdev, psize: int, ashift: int) -> int:
    """Bytes a block of `psize` takes on `vdev` (mirror and disk: rounded up to a sector)."""
    if vdev.type == "raidz":
        return raidz_asize(psize, ashift, vdev.width, vdev.nparity)
    if vdev.type == "draid":
        return draid_asize(psize, ashift, vdev.ndata, vdev.nparity)
    return -(-psize >> ashift) << ashift


def vdev_asize(vdev: Vdev, leaf: int) -> int:
    """Allocatable bytes of a top-level vdev whose smallest child has `leaf` bytes."""
    if vdev.type == "raidz":
        return leaf * vdev.width
    if vdev.type == "draid":
        child = (leaf - DRAID_REFLOW_RESERVE) // DRAID_ROWHEIGHT * DRAID_ROWHEIGHT
        group = (vdev.ndata + vdev.nparity) * DRAID_ROWHEIGHT
        return child * (vdev.width - vdev.nspares) // group * group
    return leaf


def metaslab_shift(asize: int) -> int:
    """`vdev_metaslab_set_size()`: about 200 metaslabs, at least 16, 512 MiB when in between."""
    count = asize >> MS_DEFAULT_SHIFT
    if count < MS_MIN_COUNT:
        shift = (asize // MS_MIN_COUNT).bit_length()
    elif count > MS_DEFAULT_COUNT:
        shift = (asize // MS_DEFAULT_COUNT).bit_length()
    else:
        shift = MS_DEFAULT_SHIFT
    if shift < SPA_MAXBLOCKSHIFT:
        shift = SPA_MAXBLOCKSHIFT
    elif shift > MS_MAX_SHIFT:
        shift = MS_MAX_SHIFT
        if (asize >> shift) > MS_COUNT_LIMIT:
            shift = (asize // MS_COUNT_LIMIT).bit_length()
    return shift


def deflate_ratio(vdev: Vdev, ashift: int) -> int:
    """`vdev_set_deflate_ratio()`: 512-byte units of data per 512 bytes allocated, in 1/512ths."""
    return DEFLATE_BLOCK // (block_asize(vdev, DEFLATE_BLOCK, ashift) >> SPA_MINBLOCKSHIFT)


@dataclass(frozen=True)
class Space:
    raw_bytes: int  # `zpool list` SIZE: whole metaslabs (the embedded log's too), parity included
    usable_bytes: int  # `zfs list` USED + AVAIL of a new pool: deflated, less slop space
    slop_bytes: int
    embedded_log_bytes: int  # raw bytes of the embedded log class (ZIL): in SIZE, not in USED + AVAIL


def pool_space(vdevs: list[Vdev], disk_bytes: int, ashift: int, logical_block: int = 512,
               whole_disk: bool = True) -> Space:
    """What `zpool list` and `zfs list` report for a new pool of `vdevs` on disks of `disk_bytes`."""
    leaf = leaf_asize(disk_bytes, logical_block, whole_disk)
    raw = dspace = log_raw = log_dspace = 0
    for vdev in vdevs:
        asize = vdev_asize(vdev, leaf)
        shift = metaslab_shift(asize)
        count = asize >> shift
        ratio = deflate_ratio(vdev, ashift)
        normal = count
        if count > EMBEDDED_SLOG_MIN_MS:
            normal -= 1
            log_raw += 1 << shift
            log_dspace += ((1 << shift) >> SPA_MINBLOCKSHIFT) * ratio
        raw += count << shift  # spa_prop_get_config(): SIZE adds the embedded log class
        dspace += ((normal << shift) >> SPA_MINBLOCKSHIFT) * ratio
    slop = min(dspace >> SLOP_SHIFT, MAX_SLOP)
    slop -= min(log_dspace, slop >> 1)
    slop = max(slop, min(dspace >> 1, MIN_SLOP))
    return Space(raw_bytes=raw, usable_bytes=dspace - slop, slop_bytes=slop, embedded_log_bytes=log_raw)


def data_capacity(space: Space, vdevs: list[Vdev], ashift: int, recordsize: int) -> int:
    """Bytes of uncompressed `recordsize` blocks that fit: `zfs list` counts every block as if it
    cost what a 128 KiB one costs; a block of another size costs its own parity and padding."""
    vdev = vdevs[0]  # candidates are made of equal vdevs
    per_block = block_asize(vdev, recordsize, ashift) * deflate_ratio(vdev, ashift) >> SPA_MINBLOCKSHIFT
    return space.usable_bytes * recordsize // per_block
