"""Per-pool kstats under /proc/spl/kstat/zfs/<pool>/: state and objset-* (the others are sources
of their own, in host/sources.py).

Each `objset-0x<id>` is one dataset's logical I/O counters (reads, nread,
writes, nwritten, nunlinks, nunlinked) with its name in `dataset_name`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from advisor.host.files import HostFiles
from advisor.host.kstat import KSTAT_DIR, parse_named_kstat
from advisor.host.parsing import ParseError, compact_dict, shown
from advisor.hostmodel.facts import KStat
from advisor.hostmodel.names import InvalidName, check_dataset_name


@dataclass
class PoolKStats:
    state: str | None = None
    objsets: dict[str, KStat] = field(default_factory=dict)  # dataset name -> its I/O counters
    # Files that were there but not understood: the rest is kept, the source reports these.
    errors: list[str] = field(default_factory=list)


def read_pool_kstats(files: HostFiles, pool: str, cache: ObjsetCache | None = None, objsets: bool = True) -> PoolKStats:
    """The pool's state and its datasets' objset kstats (without `objsets`, only the state: one
    file per dataset)."""
    found = PoolKStats()
    try:
        found.state = read_state(files, pool)
    except ParseError as exc:
        found.errors.append(f"state: {exc}")
    if objsets:
        found.objsets = read_objsets(files, pool, cache, found.errors)
    return found


# What the state kstat prints: spa_state_to_name() in OpenZFS's module/zfs/spa_misc.c.
POOL_STATES = frozenset({"ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "REMOVED", "UNAVAIL", "SPLIT", "SUSPENDED",
                         "TRANSITIONING", "UNKNOWN"})


def parse_state(text: str) -> str:
    """'ONLINE\n' -> 'ONLINE'; ParseError for anything that is not a pool state."""
    state = text.strip()
    if state not in POOL_STATES:
        raise ParseError(f"{shown(state)} is not a pool state ({', '.join(sorted(POOL_STATES))})")
    return state


def read_state(files: HostFiles, pool: str) -> str | None:
    try:
        text = files.read_text(f"{KSTAT_DIR}/{pool}/state")
    except OSError:
        return None
    return parse_state(text)


# path -> (digest of the file's bytes, dataset name, parsed counters) as last read; a digest, not
# the text: at 10,000 datasets the texts alone were 11.5 MB (tracemalloc, docs/reliability.md)
ObjsetCache = dict[str, tuple[bytes, str, KStat]]


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def read_objsets(
    files: HostFiles, pool: str, cache: ObjsetCache | None = None, errors: list[str] | None = None
) -> dict[str, KStat]:
    """-> {dataset name: its objset I/O kstat}.

    With a `cache`, a file whose text is unchanged since the last read gives
    the same KStat object again without parsing (the KStat must not be modified).
    """
    found: dict[str, KStat] = {}
    directory = f"{KSTAT_DIR}/{pool}/"
    # This pool's entries are taken out and put back when still there, so objsets
    # that are gone (destroyed datasets, an earlier pool of this name) are forgotten.
    previous = {p: cache.pop(p) for p in [p for p in cache if p.startswith(directory)]} if cache is not None else {}
    try:
        names = files.listdir(f"{KSTAT_DIR}/{pool}")
    except OSError:
        return found
    twice: set[str] = set()
    for entry in names:
        if not entry.startswith("objset-"):
            continue
        path = directory + entry
        try:
            data = files.read_bytes(path)  # decoded only when it changed
        except OSError:
            continue
        cached = previous.get(path)
        digest = _digest(data)
        if cached is not None and cached[0] == digest:
            _put(found, cached[1], cached[2], twice)
            if cache is not None:  # always: `previous` is empty without a cache
                cache[path] = cached
            continue
        try:
            dataset, kstat = _parse_objset(data, pool)
        except ParseError as exc:
            if errors is not None:
                errors.append(f"{entry}: {exc}")
            continue
        _put(found, dataset, kstat, twice)
        if cache is not None:
            cache[path] = (digest, dataset, kstat)
    for name in twice:  # which of the two holds the dataset's counters cannot be told
        del found[name]
        if errors is not None:
            errors.append(f"two objsets name {shown(name)}")
    return found


def _parse_objset(data: bytes, pool: str) -> tuple[str, KStat]:
    """(the dataset it counts for, its counters) of one objset kstat's bytes; ParseError if it is not one."""
    kstat = parse_named_kstat(data.decode("utf-8", errors="replace"))
    name = kstat.values.pop("dataset_name", None)
    kstat.values = compact_dict(kstat.values)  # one per dataset: 10,000 and more
    return objset_dataset(name, pool), kstat


def _put(found: dict[str, KStat], name: str, kstat: KStat, twice: set[str]) -> None:
    if name in found:
        twice.add(name)
    found[name] = kstat


def objset_dataset(name: object, pool: str) -> str:
    """An objset kstat's `dataset_name`: a dataset of `pool` (advisor/hostmodel/names.py), or a snapshot
    of one while it is mounted; ParseError for anything else."""
    if not isinstance(name, str):
        raise ParseError("no dataset_name")
    dataset, at, snapshot = name.partition("@")
    try:
        check_dataset_name(dataset)
        if at:
            check_dataset_name(f"{pool}/{snapshot}")  # a snapshot's name is made of the same characters
    except InvalidName as exc:
        raise ParseError(f"dataset_name: {exc}") from None
    if dataset.partition("/")[0] != pool:
        raise ParseError(f"dataset_name {shown(name)} is not a dataset of pool {shown(pool)}")
    return name
