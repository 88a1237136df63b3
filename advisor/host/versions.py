"""OpenZFS version strings, and which output formats each version has."""
from __future__ import annotations


def parse_zfs_version_command(stdout: str) -> tuple[str | None, str | None]:
    """`zfs version` prints 'zfs-2.3.2-1' then 'zfs-kmod-2.3.2-1' -> (userland, kmod)."""
    userland = kmod = None
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("zfs-kmod-"):
            kmod = line[len("zfs-kmod-"):]
        elif line.startswith("zfs-"):
            userland = line[len("zfs-"):]
    return userland, kmod


def has_json_output(version: tuple[int, ...] | None) -> bool:
    """`-j` on zpool status/list/get and zfs get arrived in OpenZFS 2.3."""
    return version is not None and version >= (2, 3, 0)
