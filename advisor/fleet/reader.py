"""The fleet's view, read in the background every [fleet] interval_seconds and kept: answers
read the last good view (with its age), never Prometheus itself, so a Prometheus that is down,
slow or serving junk delays or breaks no answer.  A failed reading keeps the view before it and
is counted; a view older than max_age_seconds is no longer used."""
from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from advisor.config.settings import FleetSettings
from advisor.fleet import series
from advisor.fleet.client import FleetUnavailable, instant_query, request_options
from advisor.fleet.view import FleetView

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FleetStatus:
    """What /metrics says of the reader (advisor/exporters/fleet_status.py)."""
    age_seconds: float | None  # of the view answers use; None: none
    failures: int  # readings that failed since start
    refused: tuple[tuple[str, int], ...]  # series refused since start, by reason
    sibling_runs: int  # runs in the view


class FleetReader:
    def __init__(self, settings: FleetSettings, clock: Callable[[], float] = time.time):
        self.settings, self.clock = settings, clock
        self.view: FleetView | None = None
        self.failures = 0
        self.refused: Counter = Counter()
        self.last_error: str | None = None

    async def refresh(self, session: aiohttp.ClientSession) -> bool:
        """One reading; True when it replaced the view."""
        try:
            options = request_options(self.settings)
            infos = await instant_query(session, self.settings, series.POOL_INFO, options)
            results = {name: await instant_query(session, self.settings, family, options)
                       for name, (family, _) in series.FAMILIES.items()}
        except FleetUnavailable as exc:
            self.failures += 1
            self.last_error = str(exc)
            log.warning("the fleet's Prometheus cannot be read (the last good view is kept): %s", exc)
            return False
        refused = series.Refused()
        runs = series.runs(results, series.pool_infos(infos, refused), refused)
        self.refused.update(refused.counts)
        if refused.counts:
            log.warning("fleet series refused: %s", dict(refused.counts))
        self.view, self.last_error = FleetView(runs, self.clock()), None
        return True

    async def run(self) -> None:
        """Read every interval_seconds until cancelled.  A reading that fails in a way refresh did
        not foresee is counted like any other failure: the task lives on, or the view would stay
        as it is with nothing saying why."""
        async with aiohttp.ClientSession() as session:
            while True:
                try:
                    await self.refresh(session)
                except Exception as exc:  # any failure of one reading: counted and logged
                    self.failures += 1
                    self.last_error = f"unexpected: {exc!r}"
                    log.exception("the fleet's reading failed unexpectedly (the last good view is kept)")
                await asyncio.sleep(self.settings.interval_seconds)

    def current(self) -> FleetView | None:
        """The view answers use: the last good one, unless older than max_age_seconds."""
        view = self.view
        if view is None or view.age(self.clock()) > self.settings.max_age_seconds:
            return None
        return view

    def status(self) -> FleetStatus:
        view = self.current()
        return FleetStatus(age_seconds=view.age(self.clock()) if view is not None else None, failures=self.failures,
                           refused=tuple(sorted(self.refused.items())),
                           sibling_runs=len(view.runs) if view is not None else 0)
