"""ZFS naming rules, checked before any name reaches a command line.

Follows zpool(8) "Pool names" / zfs(8) "Dataset names" and module/zcommon/
zfs_namecheck.c: components of alphanumerics and `_ - : .` (and space); pool
names start with a letter and may not be a vdev keyword. A dataset name is at
most 255 bytes (ZFS_MAX_DATASET_NAME_LEN 256 with its NUL); a pool name at most
239, room for "<pool>/$ORIGIN@$ORIGIN" (zfs_namecheck.c, pool_namecheck).
"""
from __future__ import annotations

import re

MAX_NAME_LEN = 255  # ZFS_MAX_DATASET_NAME_LEN - 1
MAX_POOL_NAME_LEN = 239  # ZFS_MAX_DATASET_NAME_LEN - 2 - 2 * strlen("$ORIGIN") - 1
# The probe's scratch dataset, a child of the pool it measures (advisor/probe/scratch.py).
SCRATCH_DATASET = "zfs-advisor-probe"
_COMPONENT = re.compile(r"[A-Za-z0-9_.: -]+")  # fullmatch: no newline slips past a `$`
_RESERVED_POOL_PREFIXES = ("mirror", "raidz", "draid", "spare", "log")
_RESERVED_POOL_NAMES = ("cache", "special", "dedup")


class InvalidName(ValueError):
    """A pool or dataset name that ZFS would reject (or that is unsafe)."""


def check_pool_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidName("pool name is empty")
    if len(name.encode()) > MAX_POOL_NAME_LEN:
        raise InvalidName(f"pool name longer than {MAX_POOL_NAME_LEN} bytes")
    if not name[0].isascii() or not name[0].isalpha():
        raise InvalidName(f"pool name {name!r} must begin with a letter")
    if not _COMPONENT.fullmatch(name) or name.strip() != name:
        raise InvalidName(f"pool name {name!r} may contain only letters, digits and _ - : . (no leading/trailing space)")
    if name.startswith(_RESERVED_POOL_PREFIXES) or name in _RESERVED_POOL_NAMES:
        raise InvalidName(f"pool name {name!r} is a reserved vdev keyword")
    if re.match(r"^c[0-9]", name):
        raise InvalidName(f"pool name {name!r} looks like a device name (c[0-9]...) which ZFS reserves")
    return name


def check_dataset_name(name: str) -> str:
    """A filesystem or volume name (no snapshots or bookmarks)."""
    if not isinstance(name, str) or not name:
        raise InvalidName("dataset name is empty")
    if len(name.encode()) > MAX_NAME_LEN:
        raise InvalidName(f"dataset name longer than {MAX_NAME_LEN} bytes")
    if "@" in name or "#" in name:
        raise InvalidName(f"{name!r} is a snapshot or bookmark, not a dataset")
    pool, _, rest = name.partition("/")
    check_pool_name(pool)
    if rest or name.endswith("/"):
        for component in rest.split("/"):
            if not component:
                raise InvalidName(f"dataset name {name!r} has an empty component")
            if component in (".", ".."):
                raise InvalidName(f"dataset name {name!r} has a '.' or '..' component")
            if not _COMPONENT.fullmatch(component):
                raise InvalidName(
                    f"dataset name {name!r}: components may contain only letters, digits and _ - : . and space"
                )
    return name
