"""The application lab's grids as cells, and which of them the storage paced (`evaluate --apps`).

A grid is one CSV of `tests/lab/app-grid` (docs/apps.md) with its `<stem>.meta.json` and, where
the run kept them, each run's raw readings in `runs/<stem>/` (`<app>-<recordsize>-x<scale>-c<clients>-<repeat>.txt`).
A cell is one grid's rows of one layout, app, disk throttle (IOPS and MB/s), number of clients,
`synchronous_commit`, `pg_wal` (PostgreSQL's WAL on a dataset of its own or not) and compression:
its recordsizes, each with its repeats.  The app's metric
and whether higher is better are the CSV's.

**Which cells are scored: the storage paced them.**  The rows' `bound` verdict cannot say: it is
`cpu` or `unclear` for every run recorded so far, because io_ticks under-reads under qemu's
throttle and the lab host's CPU was shared (docs/apps.md, "io_ticks under qemu's throttle").  What
the grids do hold is each disk's completed operations, so a cell is scored when

1. it holds at least two recordsizes (one is nothing to choose between),
2. in every run of it the busiest pool disk reached at least PACED_SHARE (90 %) of its throttle:
   of its IOPS, or of its MB/s where large requests reach that first (a throttle with both limits
   holds a disk at whichever binds; `app-grid --bytes-per-op`), from the run's raw readings where
   they exist, else the row's `disk_ops_max` against the IOPS (a run with neither leaves the cell
   unscored: nothing says what paced it), and
3. where its grid holds the same cell at another throttle, the metric followed the throttle:
   at every recordsize both hold, every repeat at the lower throttle is worse than every repeat
   at the higher one.  Without such a twin the cell is scored on 2 alone, and says so.

Why these: a disk held at its IOPS limit is the necessary sign that the storage set the pace
(the application cannot issue more I/O than the throttle lets through); the metric moving with
the throttle shows that the application waited on that I/O rather than on its CPU or a lock.
90 % rather than 100 % because a disk completes a little over or under its limit over a run (the
busiest disk at 6.5-7.6 operations a second at 7 IOPS, 15.3-16.4 at 15 in the lab's runs).

**Noise.**  A cell ranks its recordsizes only when the largest spread of one recordsize's repeats
(highest minus lowest) is smaller than the largest difference between two recordsizes' means;
a cell that does not rank still scores (any answer is then within its noise, and harms nothing).
Two means differ beyond the noise when the 90 % interval of their ratio excludes 1: Student-t on
the log metric, its variance pooled over the cell's recordsizes (advisor/evidence/interval.py, the
test `evaluate --answers` applies to the fio grids).  Pooled because two repeats give one degree
of freedom each: Welch's interval on one pair (about two degrees of freedom, t = 2.9) calls almost
nothing, and the spread rule above states no confidence at all.
"""
from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from advisor.engine.units import format_size, parse_size
from advisor.evidence.interval import pooled_log_sd, ratio_interval
from advisor.host.run_readings import completed_ops, parse_run, scsi_disks, throttle_shares

PACED_SHARE = 0.9  # the busiest disk's completed operations over its throttle's IOPS, in every run


@dataclass(frozen=True)
class AppRun:
    recordsize: str  # as ZFS prints it: 8K, 128K
    repeat: int
    position: int  # in the grid's run order
    value: float
    disk_ops: float | None  # the busiest pool disk's completed operations a second (None: not recorded)
    ops_from: str  # "raw readings", "disk_ops_max" or "" (not recorded)
    disk_share: float | None = None  # the busiest disk's share of its throttle, IOPS or MB/s, the larger


@dataclass
class AppCell:
    grid: str  # the CSV's stem
    zfs_version: str
    layout: str
    app: str
    metric: str
    higher_is_better: bool
    disk_iops: int
    disk_bps: int
    clients: str
    synchronous_commit: str
    compression: str
    pg_wal: str = ""  # "separate": PostgreSQL's WAL on a dataset of its own; "same" or "" (not recorded): beside the data
    runs: list[AppRun] = field(default_factory=list)
    scored: bool = False
    why: str = ""  # why it is scored (the pace's evidence) or why not

    @property
    def name(self) -> str:
        return (f"{self.grid}: {self.app}, {self.disk_iops} IOPS {self.disk_bps / 1e6:g} MB/s, {self.clients} clients, "
                f"synchronous_commit {self.synchronous_commit or '-'}, compression {self.compression}"
                + (", WAL on its own dataset" if self.pg_wal == "separate" else ""))

    def values(self) -> dict[str, list[float]]:
        """recordsize -> its repeats' values, the recordsizes from small to large."""
        by: dict[str, list[float]] = {}
        for r in sorted(self.runs, key=lambda r: (parse_size(r.recordsize), r.position)):
            by.setdefault(r.recordsize, []).append(r.value)
        return by

    def means(self) -> dict[str, float]:
        return {rs: statistics.fmean(v) for rs, v in self.values().items()}

    def best(self) -> str:
        means = self.means()
        return (max if self.higher_is_better else min)(means, key=lambda rs: means[rs])

    def lookup(self, recordsize: str) -> str | None:
        """The cell's own name of a recordsize ("8192", "8K"), None when it did not measure it."""
        size = parse_size(recordsize)
        return next((rs for rs in self.values() if parse_size(rs) == size), None)

    def fraction_of_best(self, recordsize: str) -> float | None:
        """The recordsize's mean as a fraction of the best mean (best / it for a lower-is-better metric)."""
        rs, means = self.lookup(recordsize), self.means()
        if rs is None:
            return None
        best = means[self.best()]
        return means[rs] / best if self.higher_is_better else best / means[rs]

    def spread_and_difference(self) -> tuple[float, float]:
        """(the largest spread of one recordsize's repeats, the largest difference between two means)."""
        spreads = [max(v) - min(v) for v in self.values().values()]
        means = list(self.means().values())
        return max(spreads), max(means) - min(means)

    def ranks(self) -> bool:
        """Whether its recordsizes differ beyond the spread of their repeats (two repeats at least)."""
        if any(len(v) < 2 for v in self.values().values()):
            return False
        spread, difference = self.spread_and_difference()
        return spread < difference

    def ratio(self, new: str, old: str) -> tuple[float, tuple[float, float] | None]:
        """How much better `new` measured than `old` (> 1: better, whichever way the metric points),
        with the 90 % interval of that ratio (None: no repeats to pool)."""
        values = self.values()
        a, b = values[self.lookup(new) or new], values[self.lookup(old) or old]
        r = statistics.fmean(a) / statistics.fmean(b)
        r = r if self.higher_is_better else 1 / r
        pooled = pooled_log_sd(values.values())
        if pooled is None:
            return r, None
        return r, ratio_interval(r, pooled[0], pooled[1], len(a), len(b))


def load_grids(directory: Path) -> list[AppCell]:
    """Every grid of `directory` (its *.csv) as cells, each marked scored or not with why."""
    cells: list[AppCell] = []
    for path in sorted(directory.glob("*.csv")):
        grid = _grid_cells(path, _settings(path.with_suffix(".meta.json")), directory / "runs" / path.stem)
        for cell in grid:
            cell.scored, cell.why = judge(cell, grid)
        cells += grid
    return cells


def _settings(meta: Path) -> dict:
    """The grid's run settings (clients, synchronous_commit, ...): what a CSV without those columns ran at."""
    try:
        runs = json.loads(meta.read_text())["runs"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return runs[0].get("settings", {}) if runs else {}


def _grid_cells(path: Path, settings: dict, runs_dir: Path) -> list[AppCell]:
    by: dict[tuple, AppCell] = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            clients = row.get("clients") or str(settings.get("clients", ""))
            sync = row.get("synchronous_commit") or str(settings.get("synchronous_commit", ""))
            wal = row.get("pg_wal") or ""  # a grid older than the column ran every WAL beside its data
            key = (row["zfs_version"], row["layout"], row["app"], row["disk_iops"], row["disk_bps"], clients, sync,
                   row["compression"], wal)
            cell = by.setdefault(key, AppCell(
                grid=path.stem, zfs_version=row["zfs_version"], layout=row["layout"], app=row["app"],
                metric=row["metric"], higher_is_better=row["higher_is_better"] == "1", disk_iops=int(row["disk_iops"]),
                disk_bps=int(row["disk_bps"]), clients=clients, synchronous_commit=sync,
                compression=row["compression"], pg_wal=wal))
            ops, share, source = _disk_ops(row, clients, runs_dir)
            cell.runs.append(AppRun(recordsize=format_size(parse_size(row["recordsize"])), repeat=int(row["repeat"]),
                                    position=int(row["position"]), value=float(row["value"]), disk_ops=ops,
                                    ops_from=source, disk_share=share))
    return list(by.values())


def _disk_ops(row: dict[str, str], clients: str, runs_dir: Path) -> tuple[float | None, float | None, str]:
    """The busiest pool disk's completed operations a second in the row's run, its share of its
    throttle (IOPS or MB/s, the larger: from the raw readings; operations over IOPS otherwise),
    and where from."""
    scale, iops, bps = row.get("throttle_scale"), float(row["disk_iops"]), float(row["disk_bps"] or 0)
    raw = runs_dir / f"{row['app']}-{row['recordsize']}-x{float(scale):g}-c{clients}-{row['repeat']}.txt" if scale else None
    if raw is not None and raw.is_file():
        before, after, _ = parse_run(raw.read_text())
        disks = scsi_disks(before)
        ops = completed_ops(before, after, disks)
        if ops:
            shares = throttle_shares(before, after, disks, iops, bps) if bps else {}
            busiest = max(ops.values())
            return busiest, max(shares.values(), default=busiest / iops), "raw readings"
    if row.get("disk_ops_max"):
        return float(row["disk_ops_max"]), float(row["disk_ops_max"]) / iops, "disk_ops_max"
    return None, None, ""


def judge(cell: AppCell, grid: list[AppCell]) -> tuple[bool, str]:
    """(scored, why): the module's rule, on one cell and the other cells of its grid."""
    paced, evidence = pace(cell, grid)
    if len(cell.values()) < 2:
        return False, f"one recordsize ({', '.join(cell.values())}): nothing to choose between; {evidence}"
    return paced, evidence


def pace(cell: AppCell, grid: list[AppCell]) -> tuple[bool, str]:
    """(whether the storage paced the cell, the evidence): rules 2 and 3 of the module."""
    unread = [r for r in cell.runs if r.disk_ops is None]
    if unread:
        return False, (f"the disks' operations not recorded in {len(unread)} of its {len(cell.runs)} runs "
                       "(no raw readings, no disk_ops_max): nothing says what paced it")
    ops = [r.disk_ops for r in cell.runs if r.disk_ops is not None]
    at = f"the busiest disk at {min(ops):.1f}-{max(ops):.1f} operations a second (throttle {cell.disk_iops} IOPS)"
    shares = [r.disk_share if r.disk_share is not None else r.disk_ops / cell.disk_iops
              for r in cell.runs if r.disk_ops is not None]
    if any(share > ops / cell.disk_iops + 0.05 for share, ops in zip(shares, ops, strict=True)):
        # large requests: the MB/s, not the count, held the disk (app-grid --bytes-per-op)
        at += (f", {min(shares) * 100:.0f}-{max(shares) * 100:.0f} % of its throttle in operations or bytes "
               f"({cell.disk_bps / 1e6:g} MB/s), whichever it reached first")
    slow = [s for s in shares if s < PACED_SHARE]
    if slow:
        return False, f"{at}: below {PACED_SHARE * 100:.0f} % of its throttle in {len(slow)} of {len(cell.runs)} runs"
    twins = [c for c in grid if c is not cell and c.disk_iops != cell.disk_iops and _same_but_throttle(c, cell)]
    verdicts = [(twin, _followed(cell, twin)) for twin in twins]
    compared = [(twin, followed) for twin, followed in verdicts if followed is not None]
    at += f", at least {PACED_SHARE * 100:.0f} % of it in every run"
    if not compared:
        return True, f"{at}; not run at another throttle in this grid"
    if not all(followed for _, followed in compared):
        against = ", ".join(f"{twin.disk_iops} IOPS" for twin, _ in compared)
        return False, f"{at}, but {cell.metric} did not follow the throttle (against {against})"
    pairs = "; ".join(f"every repeat at {min(t.disk_iops, cell.disk_iops)} IOPS worse than every one at "
                      f"{max(t.disk_iops, cell.disk_iops)}" for t, _ in compared)
    return True, f"{at}; {cell.metric} followed the throttle, recordsize by recordsize: {pairs}"


def _same_but_throttle(a: AppCell, b: AppCell) -> bool:
    return (a.zfs_version, a.layout, a.app, a.clients, a.synchronous_commit, a.compression, a.pg_wal) == \
        (b.zfs_version, b.layout, b.app, b.clients, b.synchronous_commit, b.compression, b.pg_wal)


def _followed(a: AppCell, b: AppCell) -> bool | None:
    """Whether every repeat at the lower throttle of the two is worse than every repeat at the higher,
    at every recordsize both hold (None: they share none)."""
    low, high = (a, b) if a.disk_iops < b.disk_iops else (b, a)
    lows, highs = low.values(), high.values()
    shared = [rs for rs in lows if rs in highs]
    if not shared:
        return None
    if low.higher_is_better:
        return all(max(lows[rs]) < min(highs[rs]) for rs in shared)
    return all(min(lows[rs]) > max(highs[rs]) for rs in shared)
