"""The advice the exporter publishes (zfs_advisor_recommendation_info) for the datasets named
in the `workloads` setting: the same answer /recommend gives for each, once per command run.

Plain, synchronous code like the rest of the engine; the caller runs it in a
worker thread (docs/architecture.md says why).
"""
from __future__ import annotations

import logging
import threading

from advisor.engine.loader import RuleBook
from advisor.engine.models import Recommendation
from advisor.engine.service import recommend
from advisor.facts import Host

log = logging.getLogger(__name__)
DatasetAdvice = tuple[tuple[str, Recommendation], ...]  # (workload, recommendation)


def advise(host: Host, book: RuleBook, workloads: dict[str, str]) -> DatasetAdvice:
    """Every recommendation for each dataset -> workload of the setting that exists on the host."""
    advice: list[tuple[str, Recommendation]] = []
    for dataset, workload in sorted(workloads.items()):
        if host.dataset(dataset) is None:
            continue  # not on this host (yet): nothing to advise
        try:
            response = recommend(host, book, workload, dataset=dataset, now=host.collected_at)
        except Exception:  # the exporter goes on without this dataset's advice; the log says why
            log.exception("recommendations for %s (%s) failed", dataset, workload)
            continue
        advice += [(workload, r) for r in response.recommendations]
    return tuple(advice)


class Advice:
    """`advise` computed once per command output (its generation), not once per scrape."""

    def __init__(self, book: RuleBook, workloads: dict[str, str]) -> None:
        self.book = book
        self.workloads = dict(workloads)
        self._lock = threading.Lock()  # concurrent scrapes in their threads compute it once
        self._generation: float | None = None
        self._advice: DatasetAdvice = ()

    def for_host(self, host: Host, generation: float | None) -> DatasetAdvice:
        if not self.workloads or generation is None:
            return ()
        with self._lock:
            if generation != self._generation:
                self._advice = advise(host, self.book, self.workloads)
                self._generation = generation
            return self._advice
