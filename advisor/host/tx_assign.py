"""How long writes waited to be assigned to a transaction group: /proc/spl/kstat/zfs/<pool>/dmu_tx_assign.

A named kstat of power-of-two buckets (module/zfs/spa_stats.c, `spa_tx_assign_init`): rows
`1 ns`, `2 ns`, ... `2^41 ns`, each the number of dmu_tx_assign() calls since the pool was
imported that took at most that long and more than the row before (`spa_tx_assign_add_nsecs`
counts a call in the first bucket whose bound is not below it). Trailing empty buckets are left
out, so a pool no write has reached prints no row (the lab's OpenZFS 2.3.2 printed nothing at
all). The time includes what the write throttle made a writer wait (dmu_tx_wait: the delay once
dirty data passes zfs_delay_min_dirty_percent, the wait for a new txg once it reaches
zfs_dirty_data_max): the latency the throttle adds to writes, per pool.
"""
from __future__ import annotations

from advisor.host.files import HostFiles
from advisor.host.kstat import KSTAT_DIR
from advisor.host.parsing import ParseError, shown
from advisor.hostmodel.facts import TX_ASSIGN_SERIES as SERIES
from advisor.hostmodel.facts import Histogram, Pool

_NS = 1e-9


def tx_assign_path(pool: str) -> str:
    return f"{KSTAT_DIR}/{pool}/dmu_tx_assign"


def parse_tx_assign(text: str) -> Histogram:
    """The kstat -> a histogram in seconds (bounds 2^i ns, inclusive); no buckets when none is printed.

    Its row names hold a blank (`1024 ns`), which the generic named-kstat parser does not take: each
    row is split from the right into name, type and value here."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:  # no write assigned since import (nothing printed at all)
        return Histogram(unit="seconds", bounds=[], counts={SERIES: []})
    header = lines[0].split()
    if len(lines) < 2 or lines[1].split()[:3] != ["name", "type", "data"]:
        raise ParseError("not a named kstat (no 'name type data' header)")
    rows = lines[2:]
    if len(header) < 4 or not header[3].isdigit() or int(header[3]) != len(rows):
        raise ParseError(f"header {shown(lines[0])} does not announce the {len(rows)} rows that follow (cut short?)")
    bounds, counts = [], []
    for i, line in enumerate(rows):
        parts = line.rsplit(None, 2)
        if len(parts) != 3 or parts[0] != f"{1 << i} ns" or not parts[2].isdigit():
            raise ParseError(f"row {i} is {shown(line)}, expected a count named '{1 << i} ns'")
        bounds.append((1 << i) * _NS)
        counts.append(int(parts[2]))
    return Histogram(unit="seconds", bounds=bounds, counts={SERIES: counts})


def read_tx_assign(files: HostFiles, pool: str) -> Histogram:
    return parse_tx_assign(files.read_text(tx_assign_path(pool)))


def attach_tx_assign(pool: Pool, histogram: Histogram | None) -> None:
    pool.tx_assign = histogram
