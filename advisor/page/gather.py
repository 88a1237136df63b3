"""What the pages show, read in one go (plain, synchronous: the handlers run it in a worker
thread): the rule book's answers for each pool and for each dataset that has a workload, and the
probe store's runs, results and efficiency reports. The store is only read, never created."""
from __future__ import annotations

import logging
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from advisor.answering.answerer import Answerer, Query
from advisor.engine.loader import RuleBook
from advisor.engine.models import Recommendation, RecommendResponse
from advisor.engine.service import TargetError
from advisor.evidence.bound import RunBound, run_bound
from advisor.evidence.parameters import ParameterEvidence, summarize
from advisor.hostmodel.facts import Host
from advisor.process.logs import RateLimitedLog
from advisor.recognise.classify import Recognition
from advisor.store.db import StoreError
from advisor.store.probes import ProbeStore, ResultRow, RunRow, read_existing

log = logging.getLogger(__name__)
# said again on every request while it lasts: once a minute, with a count (advisor/process/logs.py)
_repeated = RateLimitedLog(log, interval=60.0)
T = TypeVar("T")
OPEN = ("change", "undecided")  # what the pages call open: a change to make, or one to measure
RUNS_SHOWN = 50


@dataclass(frozen=True)
class Inputs:
    host: Host
    book: RuleBook
    workloads: dict[str, str]  # dataset -> workload, the `workloads` setting
    state_dir: Path
    answerer: Answerer | None = None  # the service's (None: the store under state_dir, no model)
    changes: tuple[dict[str, Any], ...] = ()  # the recorded setting changes, newest first (advisor/changes/)
    # dataset -> the workload its I/O was recognised as (advisor/recognise/); the setting wins
    recognised: dict[str, Recognition] = field(default_factory=dict)


@dataclass
class Answer:
    """One /recommend answer, or why there is none."""
    response: RecommendResponse | None = None
    error: str | None = None

    def open(self) -> list[Recommendation]:
        return [r for r in self.response.recommendations if r.status in OPEN] if self.response else []


@dataclass
class DatasetAnswer:
    dataset: str
    workload: str
    answer: Answer
    recognised: Recognition | None = None  # the workload is the recognised one, not the setting's

    @property
    def label(self) -> str:
        """'postgres', or 'postgres (wal), recognised from its I/O, confidence 0.82'."""
        if self.recognised is None:
            return self.workload
        role = f" ({self.recognised.role})" if self.recognised.role else ""
        return f"{self.workload}{role}, recognised from its I/O, confidence {self.recognised.confidence:.2f}"


@dataclass
class Stored:
    runs: list[RunRow] = field(default_factory=list)
    efficiency: dict[str, dict[str, Any]] = field(default_factory=dict)  # pool -> the latest report
    error: str | None = None  # the store cannot be read


def general_answer(inputs: Inputs, pool: str) -> Answer:
    """/recommend?pool=P: the pool-level and module advice for any workload."""
    return _answer(lambda: _answerer(inputs).answer(inputs.host, _query(inputs, pool=pool)))


def dataset_answers(inputs: Inputs, pool: str | None = None) -> list[DatasetAnswer]:
    """/recommend?workload=W&dataset=D for each dataset of the setting on the host (in `pool`), and
    for each dataset whose I/O was recognised as a workload (/recommend?workload=auto&dataset=D)."""
    answerer = _answerer(inputs).reading_once()  # one read per pool and workload, not per dataset
    named: dict[str, tuple[str, Recognition | None]] = {
        d: (found.workload, found) for d, found in inputs.recognised.items()
        if found.known and found.workload in inputs.book.workloads}
    named.update((d, (w, None)) for d, w in inputs.workloads.items())
    out = []
    for dataset, (workload, found) in sorted(named.items()):
        if (pool is not None and dataset.split("/", 1)[0] != pool) or inputs.host.dataset(dataset) is None:
            continue
        params = {"role": found.role} if found is not None and found.role else {}
        asked = _query(inputs, workload=workload, params=params, dataset=dataset)
        out.append(DatasetAnswer(dataset, workload, _answer(partial(answerer.answer, inputs.host, asked)), found))
    return out


def _answerer(inputs: Inputs) -> Answerer:
    return inputs.answerer or Answerer(inputs.book, inputs.state_dir)


def _query(inputs: Inputs, **asked: Any) -> Query:
    """An answer of the page: at the collection's time, without the efficiency report (the page shows it on its own)."""
    return Query(now=inputs.host.collected_at, with_efficiency=False, **asked)


def _answer(compute: Callable[[], RecommendResponse]) -> Answer:
    try:
        return Answer(response=compute())
    except TargetError as exc:
        return Answer(error=exc.reason)
    except Exception:  # the page goes on without this answer; the log says why
        _repeated.log(logging.ERROR, "answer failed", "an answer for the page failed", exc_info=True)
        return Answer(error="this answer could not be computed; the service log has the details")


def stored(state_dir: Path, pools: list[str], pool: str | None = None) -> Stored:
    """The newest runs (of `pool`, or of every pool) and each pool's latest efficiency report."""
    def read(store: ProbeStore | None) -> Stored:
        if store is None:
            return Stored()
        reports = {p: store.efficiency(p) for p in pools}
        return Stored(runs=store.runs(pool, None, RUNS_SHOWN), efficiency={p: r for p, r in reports.items() if r})

    found = _read(state_dir, read)
    return Stored(error=found) if isinstance(found, str) else found


@dataclass
class ProbeRun:
    run: RunRow
    parameters: list[ParameterEvidence]  # one per parameter probed, candidates ranked by IOPS
    jobs: list[str]  # the fio jobs its results ran (one per distinct job)
    bound: RunBound  # what set its pace, and the parameters set aside as evidence


def probe_run(state_dir: Path, run_id: int) -> ProbeRun | None | str:
    """The run, None when there is no such run, or why the store cannot be read."""
    def read(store: ProbeStore | None) -> ProbeRun | None:
        run = store.run(run_id) if store else None
        if run is None or store is None:
            return None
        by_parameter: dict[str, list[ResultRow]] = defaultdict(list)
        results = store.results(run_id)
        for row in results:
            by_parameter[row.parameter].append(row)
        jobs = list(dict.fromkeys(r.job for rows in by_parameter.values() for r in rows))
        return ProbeRun(run, [summarize(p, rows) for p, rows in sorted(by_parameter.items())], jobs,
                        run_bound(results))

    return _read(state_dir, read)


def _read(state_dir: Path, read: Callable[[ProbeStore | None], T]) -> T | str:
    """`read(store)`, or the reason the store cannot be read."""
    try:
        return read_existing(state_dir, read)
    except (StoreError, sqlite3.Error) as exc:
        _repeated.log(logging.WARNING, "probe store", "the probe database under %s cannot be read for the page: %s",
                       state_dir, exc)
        return f"the probe database cannot be read: {exc}"
