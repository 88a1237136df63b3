"""Answers kept while what they read is unchanged: /recommend costs what changed, not a rebuild
per collection (every few seconds) or per command run.

An answer reads the host-wide facts (identity, memory, versions, module parameters, disks, the
ARC and the other global kstats, the sources' statuses), the pools with their kstats, and the
datasets it looks up by name (the one asked for, a pool's root dataset, the one it proposes):
`Host.dataset`, recorded while it is built (`dataset_reads`). It never reads the other datasets
nor any objset kstat (only an error lists every dataset, and an error is not kept). So when those
inputs are equal on a later collection, the kept answer is the answer, and only the times it
carries (`generated_at`, the facts' `collected_at`) are those of the new collection.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime

from advisor.engine.models import RecommendResponse
from advisor.hostmodel.facts import Host, dataset_reads

# Every field of Host an answer may read but the datasets (read by name) and the collection's time.
HOST_WIDE_FIELDS = tuple(f for f in Host.model_fields if f not in ("datasets", "collected_at"))


def inputs_of(host: Host, dataset_names: set[str]) -> tuple:
    """What an answer that looked up `dataset_names` read of `host` (compared with ==)."""
    return (tuple(getattr(host, f) for f in HOST_WIDE_FIELDS),
            tuple((name, host.dataset(name)) for name in sorted(dataset_names)))


def restamped(response: RecommendResponse, host: Host) -> RecommendResponse:
    """A kept answer as a build on `host` would give it: the same, at this collection's times."""
    return response.model_copy(update={"generated_at": datetime.now(UTC),
                                       "facts": {**response.facts, "collected_at": host.collected_at.isoformat()}})


@dataclass
class _Kept:
    names: set[str]  # the datasets the answer looked up
    inputs: tuple  # inputs_of(host, names) on the host it was built on
    extra: object  # what else it read that the key does not hold (the model's status)
    response: RecommendResponse


class AnswerCache:
    """The last answer per query (`key`: the query and the state of the stores it reads), kept at
    most `max_entries` queries (the oldest go first)."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._kept: dict[Hashable, _Kept] = {}
        self._lock = threading.Lock()
        self.builds = 0  # answers built, not reused (tests)

    def get(self, key: Hashable, host: Host, extra: object,
            build: Callable[[], RecommendResponse]) -> RecommendResponse:
        """The answer to `key` on `host`: the kept one when everything it read is unchanged,
        else `build()` (which raises for a query the engine cannot answer: nothing is kept)."""
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and kept.extra == extra and kept.inputs == inputs_of(host, kept.names):
            return restamped(kept.response, host)
        with dataset_reads() as names:
            response = build()
        self.builds += 1
        entry = _Kept(set(names), inputs_of(host, names), extra, response)
        with self._lock:
            self._kept.pop(key, None)
            self._kept[key] = entry
            while len(self._kept) > self.max_entries:
                del self._kept[next(iter(self._kept))]
        return response
