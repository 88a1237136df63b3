"""What `zfs get -Hp` and `zpool get -Hp` can print for each property the advisor reads.

The enumerations are the index tables of OpenZFS's module/zcommon/zfs_prop.c for the releases
supported (2.1 to 2.3), as zfsprops(7) and zpoolprops(7) list them; sizes are bytes (-p). `-` is
"not applicable": a volume's recordsize, a filesystem's volblocksize, the sizes of a pool that is
not available; never a pool's health or a dataset's type or settings, which every one has.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from advisor.host.domains import ASHIFT_MAX, ASHIFT_MIN, MAX_BLOCK, MIN_BLOCK, POOL_HEALTH
from advisor.host.parsing import INT_MAX, ParseError, shown

NOT_APPLICABLE = "-"

_COMPRESSION = frozenset(
    {"on", "off", "lzjb", "gzip", "zle", "lz4", "zstd", "zstd-fast"}
    | {f"gzip-{n}" for n in range(1, 10)}
    | {f"zstd-{n}" for n in range(1, 20)}
    | {f"zstd-fast-{n}" for n in (*range(1, 11), *range(20, 101, 10), 500, 1000)})
_CHECKSUMS = ("sha256", "sha512", "skein", "blake3")  # each also with `,verify`; edonr with it only
_DEDUP = frozenset({"on", "off", "verify", "edonr,verify", *_CHECKSUMS, *(f"{c},verify" for c in _CHECKSUMS)})
_CHECKSUM = frozenset({"on", "off", "fletcher2", "fletcher4", "sha256", "noparity", "sha512", "skein", "edonr",
                       "blake3"})
_ON_OFF = frozenset({"on", "off"})
_CACHE = frozenset({"all", "none", "metadata"})


def _size(value: str) -> bool:
    return value.isascii() and value.isdigit() and int(value) <= INT_MAX


def _block(value: str) -> bool:
    if not _size(value):
        return False
    size = int(value)
    return MIN_BLOCK <= size <= MAX_BLOCK and not size & (size - 1)


def _ratio(value: str) -> bool:
    """A compression or dedup ratio ('1.13', '1.13x'): at least 1, since ZFS keeps a block
    compressed only when that saves space, and a deduplicated block is stored at most once."""
    try:
        ratio = float(value.removesuffix("x"))
    except ValueError:
        return False
    return math.isfinite(ratio) and ratio >= 1.0 and value[:1].isdigit()


def _percent(value: str) -> bool:
    return value.isascii() and value.isdigit() and int(value) <= 100


def _ashift(value: str) -> bool:  # the pool property: 0 is "detected per vdev"
    return value.isascii() and value.isdigit() and (int(value) == 0 or ASHIFT_MIN <= int(value) <= ASHIFT_MAX)


def _mountpoint(value: str) -> bool:
    return value in ("none", "legacy") or value.startswith("/") and value.isprintable()


def _one_of(allowed: frozenset[str]) -> Callable[[str], bool]:
    return allowed.__contains__


# property -> (what it must be, the test)
Domain = tuple[str, Callable[[str], bool]]
DATASET: dict[str, Domain] = {
    "type": ("filesystem or volume", _one_of(frozenset({"filesystem", "volume"}))),
    "recordsize": ("a power of two from 512 to 16M", _block),
    "volblocksize": ("a power of two from 512 to 16M", _block),
    "special_small_blocks": ("0 or a power of two from 512 to 16M", lambda v: v == "0" or _block(v)),
    "compression": ("a compression of zfsprops(7)", _one_of(_COMPRESSION)),
    "checksum": ("a checksum of zfsprops(7)", _one_of(_CHECKSUM)),
    "dedup": ("a dedup setting of zfsprops(7)", _one_of(_DEDUP)),
    "sync": ("standard, always or disabled", _one_of(frozenset({"standard", "always", "disabled"}))),
    "logbias": ("latency or throughput", _one_of(frozenset({"latency", "throughput"}))),
    "primarycache": ("all, none or metadata", _one_of(_CACHE)),
    "secondarycache": ("all, none or metadata", _one_of(_CACHE)),
    "atime": ("on or off", _one_of(_ON_OFF)),
    "relatime": ("on or off", _one_of(_ON_OFF)),
    "xattr": ("on, off, sa or dir", _one_of(frozenset({"on", "off", "sa", "dir"}))),
    "dnodesize": ("legacy, auto, 1k, 2k, 4k, 8k or 16k",
                  _one_of(frozenset({"legacy", "auto", "1k", "2k", "4k", "8k", "16k"}))),
    "redundant_metadata": ("all, most, some or none", _one_of(frozenset({"all", "most", "some", "none"}))),
    "copies": ("1, 2 or 3", _one_of(frozenset({"1", "2", "3"}))),
    "compressratio": ("a ratio of at least 1.00", _ratio),
    "mountpoint": ("a path, none or legacy", _mountpoint),
    **{name: ("an integer of bytes", _size) for name in ("volsize", "used", "available", "referenced", "logicalused",
                                                      "quota", "refquota", "reservation", "refreservation")},
}

POOL: dict[str, Domain] = {
    "health": ("a pool state of zpool(8)", _one_of(POOL_HEALTH)),
    "capacity": ("a ratio in percent from 0 to 100", _percent),
    "fragmentation": ("a ratio in percent from 0 to 100", _percent),
    "ashift": (f"0 or from {ASHIFT_MIN} to {ASHIFT_MAX}", _ashift),
    "dedupratio": ("a ratio of at least 1.00", _ratio),
    **{name: ("an integer of bytes", _size) for name in ("size", "allocated", "free", "freeing", "leaked", "expandsize")},
}
# The properties that may print `-` (zfsprops(7), zpoolprops(7)).
MAY_NOT_APPLY = frozenset({"recordsize", "volblocksize", "volsize", "special_small_blocks", "atime", "relatime", "xattr",
                           "dnodesize", "quota", "refquota", "mountpoint",
                           "capacity", "fragmentation", "ashift", "dedupratio", "size", "allocated", "free",
                           "expandsize"})


def check(domains: dict[str, Domain], owner: str, prop: str, value: str) -> None:
    """ParseError when `value` is not what `prop` can be; a property without a domain here is not checked."""
    domain = domains.get(prop)
    if domain is None or value == NOT_APPLICABLE and prop in MAY_NOT_APPLY:
        return
    if not domain[1](value):
        raise ParseError(f"{owner} {prop}: {shown(value)} is not {domain[0]}")


def checked(domains: dict[str, Domain], owner: str, props: dict[str, str], errors: list[str] | None) -> dict[str, str]:
    """`props` without the values that are not of their domain, whose reasons go to `errors`
    (without a list to report them in, the first such value is a ParseError)."""
    valid = {}
    for prop, value in props.items():
        try:
            check(domains, owner, prop, value)
        except ParseError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
            continue
        valid[prop] = value
    return valid
