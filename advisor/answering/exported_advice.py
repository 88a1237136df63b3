"""The advice the exporter publishes (zfs_advisor_recommendation_info) for the datasets named
in the `workloads` setting: /recommend's answer for each, asked of the same Answerer (so with
the same probe evidence and predictions), computed once per command output and state of what it
reads.

Plain, synchronous code; the caller runs it in a worker thread (docs/architecture.md says why).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Hashable

from advisor.answering.answerer import Answerer, Query
from advisor.engine.models import Recommendation
from advisor.hostmodel.facts import Host
from advisor.store.db import store_stamp

log = logging.getLogger(__name__)
DatasetAdvice = tuple[tuple[str, Recommendation], ...]  # (workload, recommendation)
WorkloadDatasets = tuple[tuple[str, str, bool], ...]  # (dataset, workload, exists)
# A scrape's deadline is short: it waits this long at most for a fit under way, then goes on
# without the model (the advice is asked again once the model's status changes).
ADVICE_WAIT_SECONDS = 5.0


def dataset_states(host: Host, workloads: dict[str, str]) -> WorkloadDatasets:
    """(dataset, workload, on the host?) for each entry of the setting; () while the datasets are not
    known (zfs get has no data on this collection: every dataset would look missing)."""
    source = host.sources.get("zfs_get")
    if source is not None and not source.ok:
        return ()
    return tuple((dataset, workload, host.dataset(dataset) is not None) for dataset, workload in sorted(workloads.items()))


def advise(host: Host, answerer: Answerer, workloads: dict[str, str]) -> DatasetAdvice:
    """Every recommendation for each dataset -> workload of the setting that exists on the host.
    The pools' efficiency reports are left out: they are `info` items, and the exporter publishes
    open changes (the report has metrics of its own)."""
    advice: list[tuple[str, Recommendation]] = []
    for dataset, workload in sorted(workloads.items()):
        if host.dataset(dataset) is None:
            continue  # not on this host (yet): nothing to advise
        try:
            response = answerer.answer(host, Query(workload, dataset=dataset, now=host.collected_at,
                                                   with_efficiency=False))
        except Exception:  # the exporter goes on without this dataset's advice; the log says why
            log.exception("recommendations for %s (%s) failed", dataset, workload)
            continue
        advice += [(workload, r) for r in response.recommendations]
    return tuple(advice)


class Advice:
    """`advise` computed once per command output (its generation) and state of the probe store and
    the model, not once per scrape, and which datasets of the setting are missing (`datasets`; each
    is logged once while it stays missing)."""

    def __init__(self, answerer: Answerer, workloads: dict[str, str]) -> None:
        self.answerer = answerer.within(ADVICE_WAIT_SECONDS)
        self.workloads = dict(workloads)
        self._lock = threading.Lock()  # concurrent scrapes in their threads compute it once
        self._key: Hashable = None
        self._advice: DatasetAdvice = ()
        self.datasets: WorkloadDatasets = ()
        self._warned: set[str] = set()  # missing datasets already logged

    def for_host(self, host: Host, generation: float | None) -> DatasetAdvice:
        if not self.workloads or generation is None:
            return ()
        with self._lock:
            key = (generation, *self._reads())  # before answering: a fit that ends meanwhile makes
            if key != self._key:                  # the next scrape ask again
                self._advice = advise(host, self.answerer, self.workloads)
                self.datasets = dataset_states(host, self.workloads)
                self._warn_missing()
                self._key = key
            return self._advice

    def _reads(self) -> tuple:
        """The state of what an answer reads besides the host: the probe store (a new probe result,
        an efficiency report) and the model (fitted or not, its version)."""
        state_dir, model = self.answerer.state_dir, self.answerer.model
        return (None if state_dir is None else store_stamp(state_dir),
                None if model is None else model.status(wait_seconds=0))

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
