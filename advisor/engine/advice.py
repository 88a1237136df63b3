"""The advice the exporter publishes (zfs_advisor_recommendation_info) for the datasets named
in the `workloads` setting: the same answer /recommend gives for each, once per command run.

Plain, synchronous code like the rest of the engine; the caller runs it in a
worker thread (docs/architecture.md says why).

It calls the engine's `recommend` itself, the one caller besides advisor/answering/answerer.py:
inside a scrape it may wait for a fit at most ADVICE_WAIT_SECONDS (advisor/model/provider.py),
which the answerer does not bound, and it hands the engine no probe evidence, so on a probed
dataset it can differ from /recommend's answer (tests/unit/test_import_graph.py says the same).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable

from advisor.engine.loader import RuleBook
from advisor.engine.models import Recommendation
from advisor.engine.predicted import PredictionLookup
from advisor.engine.service import recommend
from advisor.hostmodel.facts import Host

log = logging.getLogger(__name__)
DatasetAdvice = tuple[tuple[str, Recommendation], ...]  # (workload, recommendation)
WorkloadDatasets = tuple[tuple[str, str, bool], ...]  # (dataset, workload, exists)


def dataset_states(host: Host, workloads: dict[str, str]) -> WorkloadDatasets:
    """(dataset, workload, on the host?) for each entry of the setting; () while the datasets are not
    known (zfs get has no data on this collection: every dataset would look missing)."""
    source = host.sources.get("zfs_get")
    if source is not None and not source.ok:
        return ()
    return tuple((dataset, workload, host.dataset(dataset) is not None) for dataset, workload in sorted(workloads.items()))


# host -> (what the predictions depend on besides the facts, the lookup or None); the regression
# model's (advisor/model/provider.py ModelProvider.advice_lookup)
Predictor = Callable[[Host], tuple[Hashable, PredictionLookup | None]]


def advise(host: Host, book: RuleBook, workloads: dict[str, str],
           predicted: PredictionLookup | None = None) -> DatasetAdvice:
    """Every recommendation for each dataset -> workload of the setting that exists on the host."""
    advice: list[tuple[str, Recommendation]] = []
    for dataset, workload in sorted(workloads.items()):
        if host.dataset(dataset) is None:
            continue  # not on this host (yet): nothing to advise
        try:
            response = recommend(host, book, workload, dataset=dataset, now=host.collected_at, predicted=predicted)
        except Exception:  # the exporter goes on without this dataset's advice; the log says why
            log.exception("recommendations for %s (%s) failed", dataset, workload)
            continue
        advice += [(workload, r) for r in response.recommendations]
    return tuple(advice)


class Advice:
    """`advise` computed once per command output (its generation), not once per scrape, and which
    datasets of the setting are missing (`datasets`; each is logged once while it stays missing)."""

    def __init__(self, book: RuleBook, workloads: dict[str, str], predictor: Predictor | None = None) -> None:
        self.book = book
        self.predictor = predictor
        self.workloads = dict(workloads)
        self._lock = threading.Lock()  # concurrent scrapes in their threads compute it once
        self._generation: Hashable = None
        self._advice: DatasetAdvice = ()
        self.datasets: WorkloadDatasets = ()
        self._warned: set[str] = set()  # missing datasets already logged

    def for_host(self, host: Host, generation: float | None) -> DatasetAdvice:
        if not self.workloads or generation is None:
            return ()
        with self._lock:
            model_key, predicted = self.predictor(host) if self.predictor is not None else (None, None)
            if (generation, model_key) != self._generation:
                self._advice = advise(host, self.book, self.workloads, predicted)
                self.datasets = dataset_states(host, self.workloads)
                self._warn_missing()
                self._generation = (generation, model_key)
            return self._advice

    def _warn_missing(self) -> None:
        """One warning per dataset when it goes missing (not one per command run): the
        zfs_advisor_workload_dataset_missing series says it for as long as it lasts."""
        for dataset, workload, exists in self.datasets:
            if exists:
                self._warned.discard(dataset)
            elif dataset not in self._warned:
                self._warned.add(dataset)
                log.warning("workloads setting: dataset %s (%s) does not exist on this host: no advice for it "
                            "until it does (zfs_advisor_workload_dataset_missing)", dataset, workload,
                            extra={"dataset": dataset, "workload": workload})
