"""A pool's I/O counters and how long ago they started: /proc/spl/kstat/zfs/<pool>/iostats.

A named kstat (OpenZFS >= 2.1; module/zfs/spa_stats.c, `spa_iostats_init`): TRIM counters and,
from 2.3, the logical reads and writes through the ARC and Direct I/O. Its header line, as the
SPL prints every kstat's (`kstat_seq_show_headers`), ends in the kstat's creation time and the
time of this read, both in nanoseconds since boot (`ks_crtime`, `ks_snaptime`). The pool's
kstats are created when it enters the kernel's list of pools (`spa_add()` in
module/zfs/spa_misc.c: created, imported, or read from the cache file when the module loads), so
their difference is how long the pool has been imported: the span of every counter kept "since
import" (these, dmu_tx_assign, zpool iostat's), which Prometheus cannot tell from a reset alone.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.host.files import HostFiles
from advisor.host.kstat import KSTAT_DIR, parse_named_kstat
from advisor.host.parsing import ParseError, shown
from advisor.hostmodel.facts import KStat, Pool


@dataclass(frozen=True)
class PoolIostats:
    counters: KStat
    import_age_seconds: float  # how long the pool's kstats have existed, at this read


def iostats_path(pool: str) -> str:
    return f"{KSTAT_DIR}/{pool}/iostats"


def parse_header_age(header: str) -> float:
    """'30 1 0x01 26 7072 96827306370 217469043840' -> seconds from ks_crtime to ks_snaptime."""
    fields = header.split()
    if len(fields) != 7 or not all(f.isdigit() for f in fields[5:]):
        raise ParseError(f"header {shown(header)} is not a kstat's (kid type flags ndata size crtime snaptime)")
    created, read = int(fields[5]), int(fields[6])
    if read < created:
        raise ParseError(f"header {shown(header)}: read before it was created")
    return (read - created) / 1e9


def parse_iostats(text: str) -> PoolIostats:
    counters = parse_named_kstat(text)  # checks the header's row count too
    return PoolIostats(counters, parse_header_age(text.partition("\n")[0]))


def read_iostats(files: HostFiles, pool: str) -> PoolIostats:
    return parse_iostats(files.read_text(iostats_path(pool)))


def attach_iostats(pool: Pool, found: PoolIostats | None) -> None:
    pool.iostats = found.counters if found else None
    pool.import_age_seconds = found.import_age_seconds if found else None
