"""The one way into the answer: a `Query` (what is asked) and an `Answerer` (what an answer reads
besides the host: the probe store's evidence and efficiency reports, the model's predictions),
which calls the engine's `recommend`.

GET /recommend (advisor/api/recommend.py), `zfs-advisor recommend` and `verify`
(advisor/cli/recommend.py), the page (advisor/page/gather.py), `workload=auto`
(advisor/recognise/auto_answer.py), the change tracker's general answer (advisor/changes/followed.py),
the exporter's advice (advisor/answering/exported_advice.py) and the evaluation of the whole answer
(advisor/model/answers.py) all ask through it, so they cannot differ in what they hand the engine; tests/unit/test_import_graph.py keeps `recommend`
out of every other module outside the engine.
"""
from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from advisor.answering.qualified_effects import qualified
from advisor.engine.loader import RuleBook
from advisor.engine.models import GENERAL, ModelStatus, RecommendResponse
from advisor.engine.predicted import PredictionLookup
from advisor.engine.service import recommend
from advisor.evidence.application_bound import PoolBusy
from advisor.evidence.efficiency import PoolEfficiency
from advisor.evidence.parameters import ParameterEvidence
from advisor.hostmodel.facts import Host
from advisor.store.efficiency_reports import stored_efficiency
from advisor.store.probe_evidence import stored_evidence


class Predictions(Protocol):
    """The regression model as an answer reads it (advisor/model/provider.py `ModelProvider`)."""

    def lookup(self, host: Host, params: dict[str, str] | None = None,
               wait_seconds: float = ...) -> PredictionLookup | None: ...

    def status(self, wait_seconds: float = ...) -> ModelStatus | None: ...


# How long an answer waits for a fit under way before it goes on without the model (a fit takes
# seconds on a real host; `within` bounds it for a caller with a deadline of its own)
MODEL_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class Query:
    """What is asked: /recommend's parameters. `workload` None (or `general`): the general answer."""

    workload: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    pool: str | None = None
    dataset: str | None = None
    now: datetime | None = None  # the answer's time (default: now); the page uses the collection's
    # each pool's stored efficiency report as an `info` item; the page shows the report on its own
    with_efficiency: bool = True


class Answerer:
    """Answers on a host from the store under `state_dir` (None: no probe store) and `model` (None:
    no predictions). Built once by the app (advisor/service/app.py) and by each command."""

    def __init__(self, book: RuleBook, state_dir: str | os.PathLike[str] | None = None,
                 model: Predictions | None = None,
                 pools_busy: Callable[[], Mapping[str, PoolBusy]] | None = None) -> None:
        self.book = book
        self.state_dir = state_dir
        self.model = model
        # the daemon's window of the pools' disks (advisor/recognise/window.py); None: no window
        self.pools_busy = pools_busy
        self.wait_seconds = MODEL_WAIT_SECONDS
        self.measured: Callable[[str, str], list[ParameterEvidence]] | None = (
            None if state_dir is None else stored_evidence(state_dir))
        self.efficiency: Callable[[str], PoolEfficiency | None] | None = (
            None if state_dir is None else stored_efficiency(state_dir))

    def answer(self, host: Host, query: Query) -> RecommendResponse:
        """The engine's answer; a query it cannot answer raises `TargetError` (advisor/engine/service.py)."""
        general = query.workload is None or query.workload == GENERAL
        answer = recommend(host, self.book, query.workload, params=dict(query.params), pool=query.pool,
                         dataset=query.dataset, now=query.now, measured=self.measured,
                         # the general answer reads no prediction: it need not wait for a fit under way
                         predicted=None if general else self._predicted(host, query.params),
                         model_status=None if general else self._model_status(),
                         efficiency=self.efficiency if query.with_efficiency else None)
        return answer if self.pools_busy is None else qualified(answer, self.pools_busy())

    def _model_status(self) -> ModelStatus | None:
        return None if self.model is None else self.model.status(self.wait_seconds)

    def _predicted(self, host: Host, params: dict[str, str]) -> PredictionLookup | None:
        return None if self.model is None else self.model.lookup(host, dict(params), self.wait_seconds)

    def within(self, wait_seconds: float) -> Answerer:
        """This answerer, waiting at most `wait_seconds` for a fit under way (the exporter's advice,
        inside a scrape's deadline); past it the answer says the model is being fitted."""
        bounded = copy.copy(self)
        bounded.wait_seconds = wait_seconds
        return bounded

    def reading_once(self) -> Answerer:
        """This answerer for many answers on one host (a page): each pool and workload's evidence,
        each pool's report and each set of parameters' predictions read once, not once per answer."""
        return _ReadingOnce(self)


class _ReadingOnce(Answerer):
    def __init__(self, of: Answerer) -> None:
        super().__init__(of.book, None, of.model, of.pools_busy)
        self.state_dir = of.state_dir
        self.wait_seconds = of.wait_seconds
        self.measured = None if of.measured is None else functools.cache(of.measured)
        self.efficiency = None if of.efficiency is None else functools.cache(of.efficiency)
        self._lookups: dict[tuple[tuple[str, str], ...], PredictionLookup | None] = {}

    def _predicted(self, host: Host, params: dict[str, str]) -> PredictionLookup | None:
        key = tuple(sorted(params.items()))  # one host: the page's
        if key not in self._lookups:
            self._lookups[key] = super()._predicted(host, params)
        return self._lookups[key]
