"""The answer itself against the lab's measured grids: what a user applies, scored per cell.

`evaluate.py` scores the model's pick.  This scores `/recommend`: for each cell of the lab prior
(a layout × workload measured over a grid of recordsizes and compression=off) and each probe
budget, the whole recommendation path runs on that layout's recorded host snapshot:

* the rules, as the service loads them;
* the model fitted on the prior **without that cell** (nor its twins at another working set);
* the cell's own measured rows for the candidates the profiler would probe first (the baseline,
  then expected improvement), or, for the budget `measure`, those of the probe an undecided
  answer asks for (its measure command: `probe --param recordsize=128K,8K,4K,32K`), stored in a
  fresh probe database as completed runs of the pool: the service's own readers (probe
  evidence, the model's local samples) read them back;
* the decision (advisor/engine/decide.py).

It asks twice per cell: for a new dataset (inheriting the ZFS defaults, recordsize 128K and
lz4) and for an existing dataset at the workload's common value (the page size a database
writes, 1M for large sequential I/O), and scores the final recordsize and compression against
the cell's grid: the fraction of the grid's best (the oracle of `evaluation.py`: most IOPS with a
write p99 within 1.5x the default's), the write p99 against the default's, and harm: a change
the cell measured worse than keeping the current value, beyond the grid's own noise (the 90 %
interval of the ratio of the two means, from the repeats pooled, lies below 1).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import statistics
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.answering.answerer import Answerer, Query
from advisor.engine.loader import RuleBook
from advisor.engine.measured import WRITE_P99_TOLERANCE, same_value
from advisor.engine.models import Recommendation
from advisor.engine.units import format_size, parse_size
from advisor.evidence.interval import pooled_log_sd, ratio_interval
from advisor.hostmodel.facts import Dataset, Host, Property
from advisor.hostmodel.tunables import DATASET_DEFAULTS
from advisor.model.dataset import Sample, cells
from advisor.model.evaluation import _fit, _grid, _label, _mean_ratio, _worst_p99_ratio, oracle, probe_in_order, twins
from advisor.model.provider import FittedModel
from advisor.model.regression_model import build_model
from advisor.probe.fio_job import Hygiene, build_job
from advisor.probe.pooldesc import describe_pool
from advisor.store.db import connect
from advisor.store.probes import ProbeStore, ResultRow

log = logging.getLogger(__name__)
POOL = "tank"
SEQUENTIAL_COMMON = "1M"
MEASURE = -1  # a budget: the probe the answer's own measure command runs (`evaluate --budget measure`)


@dataclass
class AnswerResult:
    cell: str
    budget: int
    start: str  # "default" (a new dataset) or "common" (an existing one at the workload's common value)
    current: str  # recordsize,compression before
    final: str  # after applying every change of the answer
    statuses: dict[str, str]  # parameter -> change / passed / undecided / skipped
    probed: list[str]
    vs_best: float | None  # final / the grid's best (None: the final setting is not in the grid)
    vs_current: float | None
    p99_vs_default: float | None
    harm: bool  # a change measured worse than the current value beyond the noise
    loss: bool  # a change measured worse than the current value at all
    changes: list[str] = field(default_factory=list)
    estimated: bool = False  # a setting the grid did not measure, scored as the product of two effects
    # parameters whose change the application lab held (advisor/evidence/app_findings.py): the fio
    # grid is not their judge, `evaluate --apps` is; they are counted, not scored in fio's units
    held: list[str] = field(default_factory=list)
    probes_from: str = ""  # where the probes' results came from: "" the cell's own grid, else a ProbeSource's name
    outside: list[str] = field(default_factory=list)  # what the probe would measure that its source did not


@dataclass
class ProbeSource:
    """Probe results from elsewhere than the held-out cell's grid (`evaluate --apps`: the probe's fio
    job run in an application's cell, at that cell's pace).  `samples`: the grid's key of a candidate
    -> what a probe of it measures there, each sample one repeat; `rows`: their numbers for the
    store (`Measured`).  The probe plan still chooses among the grid's candidates: a budget whose
    plan picks one the source did not measure is answered from the grid, with the candidates named
    (AnswerResult.outside), never from a mix of the two."""
    name: str
    samples: dict[tuple, list[Sample]]
    rows: Measured

    def over(self, grid: dict[tuple, list[Sample]]) -> dict[tuple, list[Sample]]:
        """The grid with the source's samples in place of its own where the source measured them."""
        return {k: self.samples.get(k) or v for k, v in grid.items()}


@contextlib.contextmanager
def change_probability(value: float | None) -> Iterator[None]:
    """Decide with another CHANGE_PROBABILITY (advisor/engine/decide.py) for the evaluation."""
    from advisor.engine import decide

    saved = decide.CHANGE_PROBABILITY
    decide.CHANGE_PROBABILITY = saved if value is None else value
    try:
        yield
    finally:
        decide.CHANGE_PROBABILITY = saved


def common_value(workload: Any) -> str:
    """What users commonly set for the workload: its page size, or 1M for large, not random, I/O."""
    if workload.io.pattern != "random" and parse_size(workload.io.block_size) >= 128 << 10:
        return SEQUENTIAL_COMMON
    page = workload.parameters.get("page_size")
    return page.default if page is not None else workload.io.block_size


def _with_dataset(host: Host, name: str, recordsize: str) -> Host:
    """The recording with one more dataset: the pool's root dataset's properties (as a child would
    inherit them) with recordsize set locally.  A modified recording, for scoring only."""
    root = host.dataset(POOL)
    assert root is not None
    props = dict(root.properties)
    props["recordsize"] = Property(value=str(parse_size(recordsize)), source="local")
    added = Dataset(name=name, type="filesystem", properties=props)
    return host.model_copy(update={"datasets": [*host.datasets, added]})


def _store_rows(state_dir: str, host: Host, workload: Any, runs: list[list[Sample]], rows: Measured) -> None:
    """Probe runs of the pool, completed: each a list of lab samples.  A run without the default
    among its values has its first value as baseline, as `probe --param recordsize=8K,4K` stores it."""
    store = ProbeStore(connect(state_dir))
    pool_facts = host.pool(POOL)
    descriptor = describe_pool(pool_facts, host.disks) if pool_facts is not None else {}
    job = build_job(workload, "/probe", Hygiene(max_file_bytes=256 << 20))
    for run_samples in runs:
        first = run_samples[0].obs.value
        has_default = any(s.obs.baseline for s in run_samples)
        run = store.start_run(POOL, workload.name, workload.roles[0].name, {}, [], descriptor)
        for i, s in enumerate(run_samples):
            row = rows[row_key(s.obs)]
            store.add_result(ResultRow(
                run_id=run, parameter=s.obs.parameter, value=s.obs.value, scope="dataset",
                baseline=s.obs.baseline if has_default else s.obs.value == first,
                repeat=s.obs.repeat or i, started_at=0.0, iops=row["iops"], read_iops=row["read_iops"],
                write_iops=row["write_iops"], read_bw=row["read_bw"], write_bw=row["write_bw"],
                write_p99=row["write_p99"], runtime_seconds=8.0, written_bytes=0,
                working_set_bytes=s.obs.working_set_bytes, arc_max_bytes=s.obs.arc_max_bytes,
                pool=descriptor, job=job.text))
        store.end_run(run, "completed")
    store.conn.close()


def _by_lab_run(samples: list[Sample]) -> list[list[Sample]]:
    by_run: dict[str, list[Sample]] = {}
    for s in samples:
        by_run.setdefault(s.obs.run, []).append(s)
    return list(by_run.values())


def _final(recs: list[Recommendation], dataset: str, start: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the recordsize and compression after every change, each parameter's status)."""
    final, statuses = dict(start), dict[str, str]()
    for r in recs:
        if r.dataset == dataset and r.parameter in final and r.kind == "setting":
            statuses[r.parameter] = r.status
            if r.status == "change" and r.recommended:
                final[r.parameter] = r.recommended
    return final, statuses


class Grid:
    """A cell's measured grid: mean perf over the baseline's per setting, the write p99, the noise."""

    def __init__(self, cell: list[Sample]):
        self.by_key = _grid(cell)
        self.mean = {k: _mean_ratio(v) for k, v in self.by_key.items()}
        self.base = next(k for k, v in self.by_key.items() if v[0].obs.baseline)
        self.best = oracle(self.by_key)
        pooled = pooled_log_sd([math.exp(s.y_perf) for s in v] for v in self.by_key.values())
        self.sd: float | None = pooled[0] if pooled else None
        self.dof = pooled[1] if pooled else 0

    def key(self, recordsize: str, compression: str) -> tuple | None:
        """The grid's setting for a (recordsize, compression), None when it was not measured."""
        for k, v in self.by_key.items():
            s = v[0].obs.settings
            if same_value(s["recordsize"], recordsize) and s["compression"] == compression:
                return k
        return None

    def estimate(self, setting: dict[str, str]) -> float | None:
        """Mean perf over the baseline's of a (recordsize, compression); one the grid did not
        measure (compression=off at another recordsize than 128K) as the product of the two
        effects it did measure, each against the baseline."""
        key = self.key(setting["recordsize"], setting["compression"])
        if key is not None:
            return self.mean[key]
        size, compression = (self.key(setting["recordsize"], DATASET_DEFAULTS["compression"]),
                             self.key(DATASET_DEFAULTS["recordsize"], setting["compression"]))
        if size is None or compression is None:
            return None
        return self.mean[size] * self.mean[compression] / self.mean[self.base]

    def ratio(self, new: tuple, old: tuple) -> tuple[float, tuple[float, float] | None]:
        r = self.mean[new] / self.mean[old]
        if self.sd is None:
            return r, None
        return r, ratio_interval(r, self.sd, self.dof, len(self.by_key[new]), len(self.by_key[old]))


def _score(cell: str, budget: int, start_name: str, grid: Grid, start: dict[str, str], final: dict[str, str],
           statuses: dict[str, str], probed: list[str]) -> AnswerResult:
    before, after = grid.key(start["recordsize"], start["compression"]), grid.key(final["recordsize"],
                                                                                  final["compression"])
    before_mean, after_mean = grid.estimate(start), grid.estimate(final)
    vs_best = after_mean / grid.mean[grid.best] if after_mean is not None else None
    vs_current, harm, loss = None, False, False
    if after_mean is not None and before_mean is not None:
        vs_current, interval = after_mean / before_mean, None
        if after is not None and before is not None:
            vs_current, interval = grid.ratio(after, before)
        changed = final != start
        loss = changed and vs_current < 1.0
        harm = changed and interval is not None and interval[1] < 1.0
    p99 = None
    if after is not None:
        base_p99, after_p99 = _worst_p99_ratio(grid.by_key[grid.base]), _worst_p99_ratio(grid.by_key[after])
        p99 = after_p99 / base_p99 if base_p99 and after_p99 else None
    show = lambda s: f"{s['recordsize']},{s['compression']}"  # noqa: E731 - one line, read once
    changes = [p for p, st in statuses.items() if st == "change"]
    return AnswerResult(cell=cell, budget=budget, start=start_name, current=show(start), final=show(final),
                        statuses=statuses, probed=probed, vs_best=vs_best, vs_current=vs_current,
                        p99_vs_default=p99, harm=harm, loss=loss, changes=changes,
                        estimated=after is None or before is None)


def evaluate_answers(model_factory: Callable[[], Any], prior: list[Sample], rows: Measured, book: RuleBook,
                     hosts: dict[str, Host], budgets: list[int], only: str = "",
                     cache: dict | None = None, fitted_on: list[Sample] | None = None,
                     source: ProbeSource | None = None) -> list[AnswerResult]:
    """Every cell whose name contains `only` and whose layout has a recording in `hosts`
    (layout -> the host facts of its idle recording); `rows`: the prior's measured numbers.
    `fitted_on`: the lab rows the model was fitted on when `prior` holds cells it never saw
    (`evaluate --test`); by default the prior without the held-out cell.  `source`: the probes'
    results from there instead of the cell's grid, at the numbered budgets (ProbeSource)."""
    cache = {} if cache is None else cache
    rows = {**rows, **source.rows} if source is not None else rows
    by_cell = cells(prior)
    out: list[AnswerResult] = []
    for held in sorted(by_cell):
        layout, workload_name = held.split("/")[1], held.split("/")[2]
        if only not in held or layout not in hosts or workload_name not in book.workloads:
            continue
        workload, host = book.workloads[workload_name], hosts[layout]
        log.info("answers: %s (a fit without it, then %s probe budget(s))", held, len(budgets))
        held_out = twins(held, by_cell)
        model = _fit(model_factory, prior, held_out, cache)
        training = fitted_on if fitted_on is not None else [s for s in prior if s.obs.cell not in held_out]
        grid = Grid(by_cell[held])
        for start_name, recordsize in (("default", DATASET_DEFAULTS["recordsize"]), ("common", common_value(workload))):
            # a new dataset <pool>/<workload> inherits the defaults; the other exists at the common value
            if start_name == "default":
                asked, dataset, pool, named = host, f"{POOL}/{workload_name}", POOL, None
            else:
                dataset = f"{POOL}/eval-{workload_name}"
                asked, pool, named = _with_dataset(host, dataset, recordsize), None, dataset
            start = {"recordsize": format_size(parse_size(recordsize)), "compression": DATASET_DEFAULTS["compression"]}
            unprobed = None
            # 0 first: MEASURE follows the command the answer without probes gives
            for budget in sorted({*budgets, 0} if MEASURE in budgets else budgets, key=lambda b: (b == MEASURE, b)):
                # an existing dataset: the profiler told of it measures its value first (docs/probes.md)
                reference = grid.key(start["recordsize"], start["compression"]) if start_name == "common" else None
                runs, probed, outside = _probes(model, grid, budget, unprobed, dataset, reference, source)
                with tempfile.TemporaryDirectory(prefix="zfs-advisor-answers-") as state:
                    if runs:
                        _store_rows(state, host, workload, runs, rows)
                    provider = build_model(state, book, fitted=FittedModel(model, training, f"held-out {held}"))
                    # the service's way into the answer, on the held-out model and this cell's store
                    answer = Answerer(book, state, provider).answer(asked, Query(workload_name, pool=pool,
                                                                                 dataset=named))
                if budget == 0:
                    unprobed = answer.recommendations
                    if 0 not in budgets:
                        continue
                final, statuses = _final(answer.recommendations, dataset, start)
                result = _score(held, budget, start_name, grid, start, final, statuses, probed)
                # held: kept on the application lab's figure (a change a probe decided cites it too, and stands)
                result.held = [r.parameter for r in answer.recommendations if r.dataset == dataset and r.parameter
                               and r.status != "change"
                               and any(e.fact == f"application.{r.parameter}" for e in r.evidence)]
                if source is not None and budget > 0:
                    result.probes_from, result.outside = ("" if outside else source.name), outside
                out.append(result)
    return out


def _probes(model: Any, grid: Grid, budget: int, unprobed: list[Recommendation] | None, dataset: str,
            reference: tuple | None = None,
            source: ProbeSource | None = None) -> tuple[list[list[Sample]], list[str], list[str]]:
    """The probe runs of the pool, their labels, and those of the candidates a `source` did not
    measure.  A number: that many candidates in the order the profiler asks for them (the default,
    then expected improvement; with a `reference`, the dataset's current value, then expected
    improvement, as one run), in the lab's own runs, or in the source's where it measured every
    candidate the plan picks (else the grid's, the source's missing candidates named).
    MEASURE: when the answer without probes left the recordsize undecided, one run of every value
    its measure command names (`probe --param recordsize=128K,8K,4K`), from the grid; otherwise nothing."""
    if budget != MEASURE:
        outside: list[str] = []
        if source is not None:
            local, labels = probe_in_order(model, source.over(grid.by_key), budget, reference)
            measured = {_label(v[0].obs) for v in source.samples.values()}
            outside = [label for label in labels if label not in measured]
        if source is None or outside:
            local, labels = probe_in_order(model, grid.by_key, budget, reference)
        if reference is not None and budget >= 2:
            return ([local] if local else []), labels, outside  # one run, the reference first: its baseline
        return _by_lab_run(local), labels, outside
    keys = [k for k in (grid.key(v, DATASET_DEFAULTS["compression"]) for v in _asked_values(unprobed or [], dataset))
            if k is not None]
    run = [s for k in keys for s in grid.by_key[k]]
    return ([run] if run else []), [_label(grid.by_key[k][0].obs) for k in keys], []


def _asked_values(recs: list[Recommendation], dataset: str) -> list[str]:
    """The recordsize values an undecided answer's measure command compares, in its order."""
    for r in recs:
        if r.dataset == dataset and r.parameter == "recordsize" and r.status == "undecided" and r.measure_argv:
            spec = next((a for a in r.measure_argv if a.startswith("recordsize=")), None)
            if spec:
                return [v for v in spec.partition("=")[2].split(",") if v]
    return []


Measured = dict[tuple, dict]  # a prior row's key (`row_key`) -> its measured numbers


def row_key(obs: Any) -> tuple:
    return (obs.cell, obs.run, obs.parameter, obs.value, obs.repeat)


def measured_rows(csv_path: str | Path | None = None) -> Measured:
    """The numbers a probe stores (IOPS, bandwidths, write p99) of every row of the prior."""
    import csv

    from advisor.model.dataset import prior_path
    from advisor.model.features import from_csv_row

    path = Path(csv_path) if csv_path is not None else prior_path()
    with path.open(newline="") as f:
        return {row_key(from_csv_row(r)): _numbers(r) for r in csv.DictReader(f)
                if r.get("run_status", "completed") in ("", "completed") and float(r.get("iops") or 0) > 0}


def _numbers(row: dict[str, str]) -> dict[str, float | None]:
    def num(key: str) -> float:
        return float(row.get(key) or 0)

    p99 = row.get("write_p99_us")
    return {"iops": num("iops"), "read_iops": num("read_iops"), "write_iops": num("write_iops"),
            "read_bw": num("read_bw_bytes"), "write_bw": num("write_bw_bytes"),
            "write_p99": float(p99) / 1e6 if p99 else None}


def load_hosts(directory: Path) -> dict[str, Host]:
    """layout -> the host facts of `directory/<layout>/idle` (the lab's recordings of one OpenZFS line)."""
    from advisor.host.snapshot import collect_from_root

    async def collect_all() -> dict[str, Host]:
        found = {}
        for idle in sorted(directory.glob("*/idle")):
            found[idle.parent.name] = (await collect_from_root(str(idle), 30.0)).host
        return found

    return asyncio.run(collect_all())


def summary(results: list[AnswerResult]) -> dict[str, Any]:
    """Fractions of the best are capped at 1: a final setting that measured more than the oracle
    broke the write p99 limit the oracle keeps (counted apart, as kept or changed to).  An answer the
    application lab held is not scored in fio's units (it is held because an application disagreed
    with them): it is counted in `held`."""
    scored = [min(r.vs_best, 1.0) for r in results if r.vs_best is not None and not r.held]
    p99 = [r.p99_vs_default for r in results if r.p99_vs_default is not None]
    over = [r for r in results if r.p99_vs_default is not None and r.p99_vs_default > WRITE_P99_TOLERANCE]
    return {
        "answers": len(results),
        "scored": len(scored),
        "held": sum(bool(r.held) for r in results),  # by the application lab: judged by `evaluate --apps`
        "median_vs_best": statistics.median(scored) if scored else math.nan,
        "mean_vs_best": statistics.fmean(scored) if scored else math.nan,
        "worst_vs_best": min(scored) if scored else math.nan,
        "below_90": sum(v < 0.9 for v in scored),
        "changes": sum(bool(r.changes) for r in results),
        "undecided": sum("undecided" in r.statuses.values() for r in results),
        "losses": sum(r.loss for r in results),
        "harm": sum(r.harm for r in results),
        "worst_p99_vs_default": max(p99) if p99 else math.nan,
        "p99_over_changed": sum(bool(r.changes) for r in over),
        "p99_over_kept": sum(not r.changes for r in over),
    }


def table(results: list[AnswerResult]) -> str:
    lines = ["(~: a setting the grid did not measure, scored as the product of its two measured effects)",
             f"{'cell':36s} {'start':7s} {'probed':26s} {'current':10s} {'final':10s} {'statuses':34s} "
             f"{'vs best':>7s} {'vs cur':>6s} {'p99/def':>7s} harm"]
    for r in results:
        st = ",".join(f"{p[:4]}:{s}" for p, s in sorted(r.statuses.items()))
        fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731 - one line, read in the row below
        lines.append(f"{r.cell:36s} {r.start:7s} {' '.join(r.probed) or '-':26s} {r.current:10s} {r.final:10s} "
                     f"{st:34s} {('~' if r.estimated else '') + fmt(r.vs_best, '.1%'):>7s} {fmt(r.vs_current, '.2f'):>6s} "
                     f"{fmt(r.p99_vs_default, '.2f'):>7s} {'HARM' if r.harm else ('loss' if r.loss else '')}")
    return "\n".join(lines)


def budget_name(budget: int) -> str:
    return "measure" if budget == MEASURE else str(budget)


def summary_table(results: list[AnswerResult]) -> str:
    """One row per budget, per workload within it and overall."""
    lines = ["| probes | workload | answers | median of best | mean | worst | < 90 % | changes | undecided | "
             "losses | harm | write p99 > 1.5x default: changed to / kept | held by an application (not scored) |",
             "|" + " --- |" * 13]
    for budget in sorted({r.budget for r in results}):
        at = [r for r in results if r.budget == budget]
        groups = [(w, [r for r in at if r.cell.split("/")[2] == w]) for w in sorted({r.cell.split("/")[2] for r in at})]
        for name, group in [*groups, ("**all**", at)]:
            s = summary(group)
            lines.append(f"| {budget_name(budget)} | {name} | {s['answers']} | {s['median_vs_best']:.1%} | {s['mean_vs_best']:.1%} "
                         f"| {s['worst_vs_best']:.1%} | {s['below_90']} | {s['changes']} | {s['undecided']} | "
                         f"{s['losses']} | {s['harm']} | {s['p99_over_changed']} / {s['p99_over_kept']} | {s['held']} |")
    return "\n".join(lines)
