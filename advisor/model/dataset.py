"""Training data: observations with their targets, relative to the baseline of the same cell.

A cell is one pool × workload (a lab layout on one OpenZFS line, or this host's pool); the
targets are log(perf / the cell's mean baseline perf) and log(write p99 / the baseline's mean
write p99), so cells of very different speed share one scale: "what does this setting do
compared with the ZFS default on this pool".  Pure and numpy-free.
"""
from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterable

from advisor.model.features import Observation, from_csv_row

PRIOR_FILE = "prior-zfs2.3.csv"


@dataclass(frozen=True)
class Sample:
    obs: Observation
    y_perf: float
    y_p99: float | None


def prior_path() -> Path:
    return Path(str(resources.files("advisor.model") / "data" / PRIOR_FILE))


def load_csv(path: str | Path | None = None) -> list[Observation]:
    """The prior's rows (completed runs only); an absent file is no rows."""
    path = Path(path) if path is not None else prior_path()
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [from_csv_row(r) for r in csv.DictReader(f)
                if r.get("run_status", "completed") in ("", "completed") and float(r.get("iops") or 0) > 0]


def samples(observations: Iterable[Observation]) -> list[Sample]:
    """Targets for every observation of a cell that has a measured baseline."""
    by_cell: dict[str, list[Observation]] = defaultdict(list)
    for o in observations:
        if o.perf is not None and o.perf > 0:
            by_cell[o.cell].append(o)
    out: list[Sample] = []
    for cell in sorted(by_cell):
        rows = by_cell[cell]
        base = [o for o in rows if o.baseline]
        if not base:
            continue
        base_perf = statistics.fmean(o.perf for o in base)  # type: ignore[misc]
        p99s = [o.write_p99 for o in base if o.write_p99]
        base_p99 = statistics.fmean(p99s) if p99s else None
        for o in rows:
            y_p99 = math.log(o.write_p99 / base_p99) if o.write_p99 and base_p99 else None
            out.append(Sample(o, math.log(o.perf / base_perf), y_p99))  # type: ignore[operator]
    return out


def cells(items: Iterable[Sample]) -> dict[str, list[Sample]]:
    by: dict[str, list[Sample]] = defaultdict(list)
    for s in items:
        by[s.obs.cell].append(s)
    return dict(by)
