"""Which member disks of a raidz vdev serve a record's reads (pure; docs/planner.md, "Which disks
a raidz read reaches").

`vdev_raidz_map_alloc()` (module/zfs/vdev_raidz.c, zfs-2.3.2) lays a block out from the disk its
offset falls on (sector offset modulo the width), parity columns first; raidz1 swaps the parity
with the first data column when the offset's 1 MiB bit is set.  `vdev_raidz_asize()` rounds every
allocation up to a multiple of nparity + 1 sectors, so inside one metaslab every block starts
nparity + 1 sectors apart from the metaslab's start: on one of width / gcd(width, nparity + 1)
disks.  Metaslabs are a power of two in size (`vdev_metaslab_set_size()`), so their starts fall
on the same of those classes when gcd(width, nparity + 1) is a power of two (raidz1 and raidz3 of
an even width), and on every class in turn when it is 3 (raidz2 of a width divisible by 3).

The lab (tests/lab/experiments/raidz-start-disks.sh, 2026-11-29): 4K records on a raidz2 of six,
one metaslab's data, read from disks 3 and 6 only (295 IOPS of 150-IOPS disks); with a 1 GiB file
written first, from disks 1, 2, 4 and 5 (582 IOPS); on a raidz3 of six from disks 2, 4 and 6 both
times (438 and 433 IOPS).
"""
from __future__ import annotations

from math import gcd

DEFAULT_ASHIFT = 12  # what ZFS picks for most disks today


def sectors(recordsize: int, ashift: int | None) -> int:
    """A record's sectors (ashift unknown: 12, what ZFS picks for most disks today)."""
    return -(-recordsize // (1 << (ashift or DEFAULT_ASHIFT)))


# A metaslab is at least 2^24 bytes (SPA_MAXBLOCKSHIFT in vdev_metaslab_set_size()): a power of two of
# at least 2^8 sectors, so which start classes the pool's metaslabs cover does not depend on its size.
MIN_METASLAB_SECTORS = 1 << 8


def start_disks(width: int, nparity: int, one_metaslab: bool = False) -> list[int]:
    """The disks a block can start on: over the pool's metaslabs, or inside one metaslab whose
    start is on disk 0 (the first metaslab)."""
    step = gcd(width, nparity + 1)
    phases = {0} if one_metaslab else {(m * MIN_METASLAB_SECTORS) % step for m in range(step)}
    return sorted({(phase + k * step) % width for phase in phases for k in range(width // step)})


def read_shares(width: int, nparity: int, ashift: int | None, recordsize: int,
                one_metaslab: bool = False) -> list[float]:
    """Each member disk's reads per record read, records spread evenly over the start disks
    (they add up to the data columns of a record).  Compression is not counted."""
    width = max(nparity + 1, width)
    rows, rest = divmod(sectors(recordsize, ashift), width - nparity)
    columns = width if rows else rest + nparity  # a record smaller than a row: rest + parity columns
    placements = [[0 if swapped and c == 1 else c for c in range(nparity, columns)]
                  for swapped in ((False, True) if nparity == 1 else (False,))]
    starts = start_disks(width, nparity, one_metaslab)
    share = [0.0] * width
    for start in starts:
        for data_columns in placements:
            for c in data_columns:
                share[(start + c) % width] += 1.0 / (len(starts) * len(placements))
    return share


def busiest_share(width: int, nparity: int, ashift: int | None, recordsize: int,
                  one_metaslab: bool = False) -> float:
    """The busiest member disk's reads per record read: it bounds the vdev's random reads."""
    return max(read_shares(width, nparity, ashift, recordsize, one_metaslab))
