"""How far a probe caps the ARC, so that the working set is read from the disks, not memory.

The probe service sets these limits while it runs when asked to (`--cache arc-cap`, as the
lab prior was measured); the regression model describes every probe that reads from the disks
by the cap such a probe would set, so that a pool not probed yet, or probed with its scratch
dataset uncached (the default), is predicted as the prior's probes measured.
"""
from __future__ import annotations

from typing import Any

# zfs(4) and arc_tuning_update(): a zfs_arc_max below 64 MiB, or not above the ARC's floor
# (arc_c_min), is ignored; the floor (zfs_arc_min) may go down to 32 MiB at run time.
MIN_ARC_MAX = 64 << 20
MIN_ARC_MIN = 32 << 20
ARC_HEADROOM = 32 << 20  # the cap stays this far above the floor (it must be above it)
ARC_SHARE = 4  # the cap is at most this fraction of the working set as the ARC stores it


def stored_bytes(working_set: int, compress_percentage: int) -> int:
    """About what the working set takes in the ARC, which keeps records compressed as on disk.

    fio's buffer_compress_percentage=P makes P % of each buffer compressible: lz4 stored the
    lab's 50 % buffers at 1.73:1 (docs/prior.md), so (100 - P) % is a lower bound, and a cap
    sized from it errs towards a smaller ARC.  A candidate with compression=off stores the
    whole working set, which only makes the cap a smaller share of it."""
    return max(1, working_set * (100 - compress_percentage) // 100)


def arc_cap(stored: int) -> int:
    """The cap a probe wants for a working set that takes `stored` bytes in the ARC."""
    return max(stored // ARC_SHARE, MIN_ARC_MAX)


def arc_limits(stored: int, c_min: int) -> tuple[int | None, int]:
    """(zfs_arc_min to set while probing, or None to leave it; zfs_arc_max to set).

    The ARC's floor (c_min, all memory / 32 unless set) often stands in the way of the cap:
    2 GiB on a 64 GiB host, above a 1 GiB working set.  Then the floor is lowered too, as far
    as the cap needs and to 32 MiB at the lowest, and put back after the probe like the cap."""
    wanted = arc_cap(stored)
    floor = max(MIN_ARC_MIN, min(c_min, wanted - ARC_HEADROOM))
    return (floor if floor < c_min else None), max(wanted, floor + ARC_HEADROOM)


def disk_read_equivalent(working_set: int, compress_percentage: int) -> int:
    """The ARC cap that describes a probe reading `working_set` from the disks: what a capped
    probe sets; an uncached one (primarycache=metadata) keeps even less of it in memory."""
    return arc_cap(stored_bytes(working_set, compress_percentage))


def described_arc_max(row: Any) -> int | None:
    """The ARC cap a stored result (advisor/store/probes.py ResultRow) is described by: its own,
    or for a probe that kept its data out of the ARC (scratch primarycache=metadata), the cap a
    capped probe would have set."""
    if row.arc_max_bytes or getattr(row, "scratch_primarycache", None) != "metadata" or not row.working_set_bytes:
        return row.arc_max_bytes
    return disk_read_equivalent(row.working_set_bytes, row.compress_percentage or 0)
