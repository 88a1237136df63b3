"""The answer scored on the applications (`zfs-advisor evaluate --apps`, docs/apps.md).

`evaluate --answers` scores `/recommend`'s answer against the fio grids it was built from; this
scores the same answers against what the applications measured (advisor/model/app_grids.py: the
cells the storage paced).  For each scored cell, the answers are those `evaluate --answers` gives
for the fio cell of the workload the app stands for (APP_WORKLOADS) on the cell's layout: the
layout's recorded host, a new dataset (recordsize 128K, the ZFS default) and one at the
workload's common value (8K for postgres), at each probe budget, the probes being that fio cell's
own rows (advisor/model/answers.py, `evaluate_answers`; the same code, not a copy).  Where the
application's grid ran the probe's own fio job beside the cell, at its throttle, the 1- and
2-probe answers take their probes from that job's rows instead: the probe at the application's
pace (advisor/model/same_pace.py); where its grid did not, or its job did not run a candidate the
budget's probe plan picks, the job at the same pace in another grid that did (`boot`: another
boot of the same layout and throttle, as a probe run on another day would be); a budget whose
plan picks a candidate no job at that pace measured is the fio grid's answer, and says which.  The fio grid's probes ran at the layout's full throttle, where the
lab's emulated CPU set their pace (docs/lab.md): they stand for a probe at the cell's pace only
where nothing better exists, and are marked.  The recordsize the answer leaves the
dataset at, changed or kept, is looked up in the application's cell:

* its fraction of the best: the recordsize's mean over the best mean of the cell (best / it for a
  metric where lower is better);
* harm: the answer CHANGEs the recordsize to one the application measured worse than the current
  value beyond its noise (the 90 % interval of the ratio of the two means lies below 1, the test of
  app_grids.py); never in a cell that ranks nothing.

Only the recordsize is scored: every application cell so far ran at compression=off, and the
answer's compression (lz4 kept) is not looked up.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.engine.loader import RuleBook
from advisor.hostmodel.facts import Host
from advisor.model.answers import AnswerResult, Measured, evaluate_answers
from advisor.model.app_grids import AppCell
from advisor.model.dataset import Sample, cells
from advisor.model.same_pace import pace_twins, probe_source

# the app -> the workload profile it stands for (rules/workloads/)
APP_WORKLOADS = {"pgbench-tpcb": "postgres", "pgbench-select": "postgres", "mariadb-oltp": "mysql",
                 "copy": "fileserver",  # a tree of small and large files written whole, as onto a share
                 "borg": "backup", "media-read": "media"}
BUDGETS = (0, 1, 2)


@dataclass
class AppAnswer:
    cell: str  # AppCell.name
    fio_cell: str  # the prior's cell whose answers these are
    budget: int
    start: str  # "default" (a new dataset) or "common" (one at the workload's common value)
    probed: list[str]
    current: str  # the recordsize before
    final: str  # after the answer
    status: str  # the answer's recordsize item: change / passed / undecided / ...
    mean: float | None  # the application's mean at the final recordsize (None: not measured)
    vs_best: float | None
    vs_current: float | None  # > 1: better than the current value, whichever way the metric points
    interval: tuple[float, float] | None  # 90 % interval of vs_current
    harm: bool
    probes_from: str = "-"  # "cell": the fio job beside the cell; "boot": that job at the cell's pace in
    # another grid (another boot); "fio grid": the layout's; "-": no probes
    probes_cell: str = ""  # with "cell" or "boot": that job's cell (AppCell.name)
    fallback: str = ""  # why the fio grid's ("" where the probes are the cell's, or none)


@dataclass
class SamePace:
    """An application cell's answers at 1 and 2 probes with the probes from the fio job beside it."""
    fio_cell: str  # AppCell.name of that job's cell ("" when there is none)
    why_not: str  # why every budget's probes come from the fio grid ("" when they need not)
    answers: dict[str, list[AnswerResult]]  # the prior's fio cell -> its answers


def fio_cells(cell: AppCell, prior: list[Sample]) -> list[str]:
    """The prior's cells of the workload the app stands for on the cell's layout and OpenZFS."""
    workload = APP_WORKLOADS.get(cell.app)
    stem = f"zfs{cell.zfs_version}/{cell.layout}/{workload}/"
    return sorted({s.obs.cell for s in prior if s.obs.cell.startswith(stem)}) if workload else []


def unanswerable(cells: list[AppCell], prior: list[Sample], hosts: dict[str, Host]) -> None:
    """Mark not scored, with why, the paced cells no answer can be scored on."""
    for cell in (c for c in cells if c.scored):
        why = _no_answer(cell, prior, hosts)
        if why:
            cell.scored, cell.why = False, f"{why}; {cell.why}"


def _no_answer(cell: AppCell, prior: list[Sample], hosts: dict[str, Host]) -> str | None:
    workload = APP_WORKLOADS.get(cell.app)
    if cell.app.startswith("fio-"):
        return ("the probe's own fio job: not scored as an application (in the fidelity table where one ran "
                "beside it)")
    if workload is None:
        return f"no workload stands for {cell.app} (APP_WORKLOADS)"
    if not fio_cells(cell, prior):
        return f"no fio cell of {workload} on {cell.layout} (OpenZFS {cell.zfs_version}) in the prior"
    if cell.layout not in hosts:
        return f"no recorded host of {cell.layout} to answer on"
    return None


def answers_for(cells: list[AppCell], model_factory: Callable[[], Any], prior: list[Sample], rows: Measured,
                book: RuleBook, hosts: dict[str, Host], cache: dict | None = None) -> dict[str, list[AnswerResult]]:
    """fio cell -> `evaluate --answers`' answers for it, for every fio cell a scored cell needs."""
    wanted = sorted({f for c in cells if c.scored for f in fio_cells(c, prior)})
    return {f: evaluate_answers(model_factory, prior, rows, book, hosts, list(BUDGETS), f, cache) for f in wanted}


def same_pace_for(all_cells: list[AppCell], model_factory: Callable[[], Any], prior: list[Sample], rows: Measured,
                  book: RuleBook, hosts: dict[str, Host], cache: dict | None = None) -> dict[str, SamePace]:
    """Scored cell (AppCell.name) -> its answers with probes, the probes from the fio job at its pace
    (advisor/model/same_pace.py): beside it in its grid first; where that job did not run a candidate
    the budget's plan picks, the same pace's job in another grid that did."""
    by_prior_cell = cells(prior)
    out: dict[str, SamePace] = {}
    for cell in (c for c in all_cells if c.scored):
        twins = pace_twins(cell, all_cells, APP_WORKLOADS[cell.app])
        if not twins:
            out[cell.name] = SamePace("", "no fio job at this cell's pace in any grid", {})
            continue
        answers: dict[str, list[AnswerResult]] = {}
        why_not = ""
        for f in fio_cells(cell, prior):
            chosen: dict[tuple[int, str], AnswerResult] = {}
            for fio in twins:
                source, why_not = probe_source(fio, by_prior_cell[f])
                if source is None:
                    continue
                for a in evaluate_answers(model_factory, prior, rows, book, hosts, [b for b in BUDGETS if b > 0],
                                          f, cache, source=source):
                    if (a.budget, a.start) not in chosen or (chosen[(a.budget, a.start)].outside and not a.outside):
                        chosen[(a.budget, a.start)] = a
                if all(not a.outside for a in chosen.values()):
                    break  # every budget's plan measured at this pace
            if chosen:
                answers[f] = list(chosen.values())
        out[cell.name] = SamePace(twins[0].name, "" if answers else why_not, answers)
    return out


def score(cell: AppCell, answer: AnswerResult, why_grid: str = "") -> AppAnswer:
    """One answer's recordsize looked up in one application cell; `why_grid`: why its probes, if
    any, are the fio grid's when the answer does not say (AnswerResult.outside)."""
    current, final = answer.current.split(",")[0], answer.final.split(",")[0]
    ranked, measured = cell.ranks(), cell.lookup(final) is not None
    vs_current, interval = cell.ratio(final, current) if measured and cell.lookup(current) else (None, None)
    changed = answer.statuses.get("recordsize") == "change" and final != current
    probes_from, fallback = "-", ""
    if answer.budget != 0:
        probes_from = ("fio grid" if not answer.probes_from else
                       "cell" if answer.probes_from.startswith(f"{cell.grid}: ") else "boot")
        if answer.outside:
            fallback = f"the probe would measure {', '.join(answer.outside)}, not in this cell"
        elif not answer.probes_from:
            fallback = why_grid
    return AppAnswer(cell=cell.name, fio_cell=answer.cell, budget=answer.budget, start=answer.start,
                     probed=answer.probed, current=current, final=final,
                     status=answer.statuses.get("recordsize", "-"),
                     mean=cell.means()[cell.lookup(final) or final] if measured else None,
                     vs_best=cell.fraction_of_best(final), vs_current=vs_current, interval=interval,
                     harm=changed and ranked and interval is not None and interval[1] < 1.0,
                     probes_from=probes_from, probes_cell=answer.probes_from, fallback=fallback)


def evaluate(cells: list[AppCell], answers: dict[str, list[AnswerResult]], prior: list[Sample],
             same_pace: dict[str, SamePace] | None = None) -> list[AppAnswer]:
    """Every scored cell's answers, scored: at 0 probes the fio cell's, with probes the cell's own
    fio job's where `same_pace` holds them (else the fio cell's, with why)."""
    out = []
    for cell in (c for c in cells if c.scored):
        pace = (same_pace or {}).get(cell.name, SamePace("", "", {}))
        for f in fio_cells(cell, prior):
            mine = {(a.budget, a.start): a for a in pace.answers.get(f, [])}
            out += [score(cell, mine.get((a.budget, a.start), a), pace.why_not) for a in answers.get(f, [])]
    return out


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def summary(cells: list[AppCell], results: list[AppAnswer]) -> dict[str, Any]:
    """The last line's numbers: scored cells, the fraction of the best at 0 and 2 probes, harm."""
    def fractions(budget: int) -> list[float]:
        return [r.vs_best for r in results if r.budget == budget and r.vs_best is not None]

    at0, at2 = fractions(0), fractions(2)
    return {"cells": sum(c.scored for c in cells), "answers": len(results),
            "unmeasured": sum(r.vs_best is None for r in results),
            "median_0": statistics.median(at0) if at0 else None, "worst_0": min(at0) if at0 else None,
            "worst_2": min(at2) if at2 else None, "harm": sum(r.harm for r in results)}


def summary_line(cells: list[AppCell], results: list[AppAnswer]) -> str:
    """`evaluate --apps`' last line; harm counts the harmful answers over every budget."""
    s = summary(cells, results)
    # an answer whose value the application never ran scores nothing: said, not hidden in the figures
    unmeasured = f"; unmeasured {s['unmeasured']} (answers at a recordsize the cell did not run)" if s["unmeasured"] else ""
    return (f"apps: {s['cells']} cells, 0 probes median {_percent(s['median_0'])}, worst {_percent(s['worst_0'])}; "
            f"2 probes worst {_percent(s['worst_2'])}; harm {s['harm']}{unmeasured}")


def cell_table(cell: AppCell, results: list[AppAnswer]) -> str:
    """One scored cell: its measurements, why it is scored, and each answer per budget."""
    spread, difference = cell.spread_and_difference()
    measured = ", ".join(f"{rs} {statistics.fmean(v):.2f} ({', '.join(f'{x:.2f}' for x in v)})"
                         for rs, v in cell.values().items())
    noise = (f"repeats spread up to {spread:.2f}, means differ up to {difference:.2f}: "
             + ("ranks its recordsizes" if cell.ranks() else "ranks nothing (any answer is within its noise)"))
    lines = [cell.name,
             f"  {cell.metric} ({'higher' if cell.higher_is_better else 'lower'} is better), mean (repeats): {measured}; "
             f"best {cell.best()}",
             f"  {noise}", f"  paced: {cell.why}",
             f"  {'probes':6s} {'start':7s} {'probed':30s} {'from':9s} {'current':7s} {'final':5s} {'status':9s} "
             f"{cell.metric:>6s} {'vs best':>7s} {'vs current (90 %)':>18s} harm"]
    ordered = sorted(results, key=lambda r: (r.budget, r.start != "default"))
    for r in ordered:
        ratio = "-" if r.vs_current is None else f"{r.vs_current:.2f}" + (
            f" ({r.interval[0]:.2f}-{r.interval[1]:.2f})" if r.interval else "")
        lines.append(f"  {r.budget:<6d} {r.start:7s} {' '.join(r.probed) or '-':30s} "
                     f"{r.probes_from + ('*' if r.fallback else ''):9s} {r.current:7s} {r.final:5s} "
                     f"{r.status:9s} {'-' if r.mean is None else f'{r.mean:.2f}':>6s} {_percent(r.vs_best):>7s} "
                     f"{ratio:>18s} {'HARM' if r.harm else ''}")
    why: dict[str, list[str]] = {}
    for r in ordered:
        if r.fallback:
            why.setdefault(r.fallback, []).append(f"{r.budget} probes {r.start}")
    lines += [f"  * the fio grid's probes ({', '.join(at)}): {reason}" for reason, at in why.items()]
    boots = sorted({r.probes_cell for r in ordered if r.probes_from == "boot"})
    lines += [f"  boot: the probes are the probe's fio job at this cell's pace in another boot: {b}" for b in boots]
    return "\n".join(lines)


def report(cells: list[AppCell], results: list[AppAnswer]) -> str:
    """The tables of `evaluate --apps`, the cells not scored with why, then the last line."""
    out = [cell_table(c, [r for r in results if r.cell == c.name]) for c in cells if c.scored]
    skipped = [f"- {c.name}: {c.why}" for c in cells if not c.scored]
    if skipped:
        out.append("not scored:\n" + "\n".join(skipped))
    out.append(summary_line(cells, results))
    return "\n\n".join(out)
