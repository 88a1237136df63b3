"""Training data: observations with their targets, relative to the baseline of the same run.

A cell is one pool × workload (a lab layout on one OpenZFS line, or this host's pool); the
targets are log(perf / the baseline's mean perf) and log(write p99 / the baseline's mean write
p99), so cells of very different speed share one scale: "what does this setting do compared
with the ZFS default on this pool".  The baseline is that of the observation's own probe run
when the run measured one (a cell measured in two runs compares each run with itself: the
pool's speed drifts between runs), else the mean of the cell's baselines.  Pure and numpy-free.
"""
from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

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
        cell_base = _baseline([o for o in rows if o.baseline])
        if cell_base is None:
            continue
        by_run = {run: _baseline([o for o in rows if o.baseline and o.run == run]) for run in {o.run for o in rows}}
        for o in rows:
            base_perf, base_p99 = by_run[o.run] or cell_base
            y_p99 = math.log(o.write_p99 / base_p99) if o.write_p99 and base_p99 else None
            if o.perf is not None:  # always: by_cell holds measured rows only
                out.append(Sample(o, math.log(o.perf / base_perf), y_p99))
    return out


def _baseline(base: list[Observation]) -> tuple[float, float | None] | None:
    """(mean perf, mean write p99) of baseline observations; None without any."""
    if not base:
        return None
    p99s = [o.write_p99 for o in base if o.write_p99]
    perfs = [o.perf for o in base if o.perf is not None]  # all of them: samples() keeps measured rows only
    return statistics.fmean(perfs), (statistics.fmean(p99s) if p99s else None)


def cells(items: Iterable[Sample]) -> dict[str, list[Sample]]:
    by: dict[str, list[Sample]] = defaultdict(list)
    for s in items:
        by[s.obs.cell].append(s)
    return dict(by)
