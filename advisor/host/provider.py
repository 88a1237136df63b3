"""Facts on demand for the service: cached briefly and coalesced.

However many scrapes or requests arrive at once, at most one collection runs
(one set of zpool/zfs processes); callers arriving while it runs share its
result, and a result younger than `max_age_seconds` is served as is.
"""
from __future__ import annotations

import asyncio
import time

from advisor.host.collect import CollectCache, Collection
from advisor.host.snapshot import collect_from_root


class FactsProvider:
    def __init__(self, root: str = "/", command_timeout_seconds: float = 10.0, max_age_seconds: float = 5.0):
        self.root = root
        self.command_timeout_seconds = command_timeout_seconds
        self.max_age_seconds = max_age_seconds
        self.collections = 0  # how many collections actually ran (self-metric)
        self._last: Collection | None = None
        self._last_at = 0.0
        self._inflight: asyncio.Task[Collection] | None = None
        self._cache = CollectCache()

    @property
    def last(self) -> Collection | None:
        return self._last

    def age_seconds(self) -> float | None:
        """Seconds since the last collection finished; None before the first."""
        return time.monotonic() - self._last_at if self._last is not None else None

    async def get(self, max_age_seconds: float | None = None) -> Collection:
        max_age = self.max_age_seconds if max_age_seconds is None else max_age_seconds
        if self._last is not None and time.monotonic() - self._last_at <= max_age:
            return self._last
        if self._inflight is None:
            self._inflight = asyncio.create_task(self._collect())
        # shield: one caller giving up (a scrape timing out) must not cancel
        # the collection the other callers are waiting for.
        return await asyncio.shield(self._inflight)

    async def _collect(self) -> Collection:
        try:
            collection = await collect_from_root(self.root, self.command_timeout_seconds, self._cache)
            self.collections += 1
            self._last, self._last_at = collection, time.monotonic()
            return collection
        finally:
            self._inflight = None
