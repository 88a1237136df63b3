"""The valid range and form of a host value: what the kernel or a command can print for it.

A parser checks each value here before it becomes a fact. A value outside its domain
(`MemTotal: 0`, an ashift of 99, a negative counter, a second row for the same key) raises
`ParseError`: the value is left out, as if unknown, and its source reports why
(docs/reliability.md), so that no answer is built on it.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from advisor.host.parsing import ParseError, shown, to_int

MIB = 1 << 20
# The smallest and largest block of a dataset (SPA_MINBLOCKSIZE, SPA_MAXBLOCKSIZE: include/sys/spa.h).
MIN_BLOCK, MAX_BLOCK = 512, 16 * MIB
# The sector size a top-level vdev is created with, as a power of two (ASHIFT_MIN, ASHIFT_MAX: include/sys/vdev_impl.h).
ASHIFT_MIN, ASHIFT_MAX = 9, 16
# The most CPUs a Linux kernel can be built for (NR_CPUS, CONFIG_NR_CPUS_RANGE_END of arch/x86/Kconfig).
NR_CPUS_MAX = 8192
# What `zpool get health` and the state column of `zpool status` print: zpool_state_to_name() and
# zpool_get_state_str() of lib/libzfs/libzfs_pool.c; AVAIL and INUSE are a spare's (print_spares).
POOL_HEALTH = frozenset({"ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "UNAVAIL", "REMOVED", "SUSPENDED", "SPLIT",
                         "UNKNOWN"})
VDEV_STATES = POOL_HEALTH | {"AVAIL", "INUSE"}
# A hostname as the kernel holds it (at most __NEW_UTS_LEN, 64 bytes): a name of letters, digits and
# `- . _`, nothing a log line or a label could be split on (no blank, no control character).
_HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_KERNEL_RELEASE = re.compile(r"[\x21-\x7e]{1,64}")  # `uname -r`: one printable word


def count(text: str, what: str) -> int:
    """A counter, a size or a time as a command or kstat prints it: an integer from 0 within 64 bits."""
    return non_negative(to_int(text, what), what)


def non_negative(value, what: str):
    if value < 0:
        raise ParseError(f"{what}: {value} is below 0")
    return value


def one_of(value: str, allowed: Collection[str], what: str) -> str:
    if value not in allowed:
        raise ParseError(f"{what}: {shown(value)} is none of {', '.join(sorted(allowed)[:12])}"
                         f"{' ...' if len(allowed) > 12 else ''}")
    return value


def unique(keys: Iterable[str], what: str) -> None:
    """A key (a property, a counter, a device) printed once: a second row for it is damage,
    not a newer value (which of the two is true cannot be told)."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise ParseError(f"{what}: two rows for {shown(key)}")
        seen.add(key)


def hostname(text: str) -> str:
    if not _HOSTNAME.fullmatch(text):
        raise ParseError(f"hostname {shown(text)} is not a host name (letters, digits and - . _, at most 64)")
    return text


def kernel_release(text: str) -> str:
    if not _KERNEL_RELEASE.fullmatch(text):
        raise ParseError(f"kernel release {shown(text)} is not one printable word of at most 64 characters")
    return text
