"""Does the probe's job rank the recordsizes as the application does, at the same pace?
(`evaluate --apps`' first table, docs/apps.md)

For every application cell with the probe's fio job beside it (same_pace.twin: one grid, one
throttle), each recordsize both measured is compared with the default (128K, the probe's
baseline): the fio job's ratio and the application's (> 1: better, whichever way the metric
points), each with its 90 % interval from the same code as the answers' harm (AppCell.ratio:
Student-t on the log metric, pooled over the cell's recordsizes).  A side of 1 is called only where
the interval excludes 1; the verdict says whether the two call the same side.  Whether the storage
paced each cell is app_grids.pace's evidence, shown beside: a ratio measured at a CPU's pace says
nothing about the disks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from advisor.engine.units import parse_size
from advisor.hostmodel.tunables import DATASET_DEFAULTS
from advisor.model.app_evaluation import APP_WORKLOADS
from advisor.model.app_grids import AppCell, pace
from advisor.model.same_pace import twin

Interval = tuple[float, float] | None


@dataclass
class RatioPair:
    recordsize: str
    reference: str  # the default recordsize the ratios are to
    fio: float
    fio_interval: Interval
    app: float
    app_interval: Interval
    verdict: str


@dataclass
class Fidelity:
    app_cell: str  # AppCell.name
    fio_cell: str
    disk_iops: int
    fio_best: str
    fio_best_mean: float  # in the fio cell's metric (IOPS)
    app_best: str
    app_best_mean: float  # in the application's
    fio_paced: bool
    app_paced: bool
    pace: str  # the fio job's pace evidence (app_grids.pace)
    ratios: list[RatioPair] = field(default_factory=list)
    why_none: str = ""  # why there is no ratio to compare


def _side(interval: Interval) -> int:
    """+1: better than the reference beyond the noise, -1: worse, 0: not called."""
    if interval is None:
        return 0
    return 1 if interval[0] > 1.0 else -1 if interval[1] < 1.0 else 0


def verdict(fio: float, fio_interval: Interval, app: float, app_interval: Interval) -> str:
    sides = _side(fio_interval), _side(app_interval)
    direction = "same direction" if (fio > 1.0) == (app > 1.0) else "opposite directions"
    if all(sides):
        return "agree" if sides[0] == sides[1] else "disagree"
    if any(sides):
        return f"{'fio' if sides[0] else 'the application'} alone beyond its noise, {direction}"
    return f"neither beyond its noise, {direction}"


def fidelity(cells: list[AppCell]) -> list[Fidelity]:
    """One row per application cell with the fio job of its workload beside it."""
    out = []
    for cell in cells:
        workload = APP_WORKLOADS.get(cell.app)
        fio = twin(cell, cells, workload) if workload else None
        if fio is None:
            continue
        grid = [c for c in cells if c.grid == cell.grid]
        (fio_paced, evidence), (app_paced, _) = pace(fio, grid), pace(cell, grid)
        row = Fidelity(app_cell=cell.name, fio_cell=fio.name, disk_iops=cell.disk_iops, fio_best=fio.best(),
                       fio_best_mean=fio.means()[fio.best()], app_best=cell.best(),
                       app_best_mean=cell.means()[cell.best()], fio_paced=fio_paced, app_paced=app_paced, pace=evidence)
        reference = DATASET_DEFAULTS["recordsize"]
        if fio.lookup(reference) is None or cell.lookup(reference) is None:
            row.why_none = f"the default recordsize ({reference}) not measured in both"
        shared = [rs for rs in fio.values() if cell.lookup(rs) is not None and parse_size(rs) != parse_size(reference)]
        for rs in shared if not row.why_none else []:
            (f, fi), (a, ai) = fio.ratio(rs, reference), cell.ratio(rs, reference)
            row.ratios.append(RatioPair(rs, reference, f, fi, a, ai, verdict(f, fi, a, ai)))
        if not shared and not row.why_none:
            row.why_none = "no recordsize but the default measured in both"
        out.append(row)
    return out


def _ratio(value: float, interval: Interval) -> str:
    return f"{value:.2f}" + (f" ({interval[0]:.2f}-{interval[1]:.2f})" if interval else " (one repeat)")


def table(rows: list[Fidelity]) -> str:
    """The fidelity table of `evaluate --apps`, printed before the answers'."""
    lines = ["does the probe's job rank the recordsizes as the application does, at the same pace "
             "(ratios to the default, > 1 better; 90 % intervals):"]
    for r in rows:
        lines.append(f"{r.app_cell}\n  beside: {r.fio_cell}\n  best: fio {r.fio_best} ({r.fio_best_mean:.2f}), "
                     f"application {r.app_best} ({r.app_best_mean:.2f}); "
                     f"paced by the storage: fio {'yes' if r.fio_paced else 'no'}, application "
                     f"{'yes' if r.app_paced else 'no'}; the fio job's pace: {r.pace}")
        lines += [f"  {p.recordsize}/{p.reference}: fio {_ratio(p.fio, p.fio_interval)}, application "
                  f"{_ratio(p.app, p.app_interval)}: {p.verdict}" for p in r.ratios]
        if r.why_none:
            lines.append(f"  no ratio: {r.why_none}")
    return "\n".join(lines) if rows else "fidelity: no application cell has the probe's fio job beside it"


def markdown(rows: list[Fidelity], cells: list[AppCell]) -> str:
    """docs/apps.md's fidelity table: per application, layout and pace, the probe's best recordsize and
    what the application measured there, as a fraction of its own best (regenerate with
    `python -m advisor.model.probe_fidelity`; tests/unit/test_apps_doc.py keeps the doc in step)."""
    by_name = {c.name: c for c in cells}
    lines = ["| application | layout | disks (IOPS each) | paced by the disks (fio / app) | probe's best | "
             "application's best | the app at the probe's best | over 128K, fio / app (90 % intervals) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        cell = by_name[r.app_cell]
        fraction = cell.fraction_of_best(r.fio_best)
        at_probe = "not measured" if fraction is None else f"{fraction * 100:.1f} %"
        pairs = "; ".join(f"{p.recordsize}: {_ratio(p.fio, p.fio_interval)} / {_ratio(p.app, p.app_interval)}, "
                          f"{p.verdict}" for p in r.ratios) or r.why_none
        paced = f"{'yes' if r.fio_paced else 'no'} / {'yes' if r.app_paced else 'no'}"
        lines.append(f"| {cell.app} | {cell.layout} | {r.disk_iops} | {paced} | {r.fio_best} | {r.app_best} | "
                     f"{at_probe} | {pairs} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from pathlib import Path

    from advisor.model.app_grids import load_grids

    grids = load_grids(Path(__file__).resolve().parent.parent.parent / "tests" / "lab" / "apps-data")
    print(markdown(fidelity(grids), grids))
