"""Transaction-group history: /proc/spl/kstat/zfs/<pool>/txgs.

Columns (module/zfs/spa_stats.c): txg birth state ndirty nread nwritten reads
writes otime qtime wtime stime; times in nanoseconds, birth since boot. How
many rows are kept is `zfs_txg_history` (zfs(4)); 0 means none.
"""
from __future__ import annotations

from advisor.host.domains import count
from advisor.host.files import HostFiles
from advisor.host.kstat import KSTAT_DIR
from advisor.host.parsing import ParseError, shown, whole_lines
from advisor.hostmodel.facts import Pool, Txg

_STATES = {"O": "open", "Q": "quiescing", "W": "waiting", "S": "syncing", "C": "committed"}
_NS = 1e-9


def txgs_path(pool: str) -> str:
    return f"{KSTAT_DIR}/{pool}/txgs"


def read_txgs(files: HostFiles, pool: str) -> list[Txg]:
    """The pool's txg history, or [] when it cannot be read or parsed (a pool gone, no history)."""
    try:
        return txgs_of(files, pool)
    except (OSError, ParseError):
        return []


def txgs_of(files: HostFiles, pool: str) -> list[Txg]:
    """The pool's txg history; OSError or ParseError when it cannot be read or understood (the sources' table)."""
    return parse_txgs(files.read_text(txgs_path(pool)))


def attach_txgs(pool: Pool, txgs: list[Txg] | None) -> None:
    pool.txgs = txgs or []


def parse_txgs(text: str) -> list[Txg]:
    """-> the rows in file order; ParseError when there is no header or a row is not a txg row."""
    rows: list[Txg] = []
    header_seen = False
    for line in whole_lines(text, "txgs").splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "txg" and not header_seen:
            header_seen = True
            continue
        if not header_seen:
            raise ParseError(f"no txgs header before {shown(line)}")
        if len(fields) < 12 or fields[2] not in _STATES:
            raise ParseError(f"not a txg row: {shown(line)}")
        txg, birth, state, *nums = fields[:12]
        n = [count(x, "txgs") for x in nums]
        rows.append(
            Txg(
                txg=count(txg, "txg"),
                birth_seconds=count(birth, "txg birth") * _NS,
                state=_STATES[state],
                dirty_bytes=n[0],
                read_bytes=n[1],
                written_bytes=n[2],
                reads=n[3],
                writes=n[4],
                open_seconds=n[5] * _NS,
                quiesce_seconds=n[6] * _NS,
                wait_seconds=n[7] * _NS,
                sync_seconds=n[8] * _NS,
            )
        )
    if not header_seen:
        raise ParseError("no txgs header (txg birth state ...)")
    return rows
