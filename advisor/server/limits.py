"""Heavy requests under load: bounded work, the event loop favoured over worker threads, and the
long-lived facts kept out of the garbage collector's full passes (docs/reliability.md).

* `WorkLimiter`: at most `in_flight` heavy requests run at once; up to `waiting` more wait
  their turn for at most `wait_seconds`; beyond that a request gets 503 with Retry-After at
  once instead of piling up. /healthz never passes through it.
"""
from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from advisor.process.logs import RateLimitedLog
from advisor.server.errors import json_error

HEAVY_PATHS = ("/metrics", "/v1/facts", "/recommend", "/v1/pools", "/v1/probes", "/v1/plan")

log = logging.getLogger(__name__)
_busy_log = RateLimitedLog(log, interval=60.0)


# How long a worker thread may keep the GIL while the event loop asks for it (Python's default
# is 5 ms). The loop gives the GIL up for every select() and socket send; with a render or a
# command parse running in a thread it waited up to 5 ms to get it back each time, and tens of
# sends per turn of the loop made /healthz wait hundreds of milliseconds (docs/reliability.md).
LOOP_SWITCH_INTERVAL_SECONDS = 0.0005


def favour_the_event_loop(interval: float = LOOP_SWITCH_INTERVAL_SECONDS) -> None:
    """Shorten the GIL switch interval (sys.setswitchinterval) for the service process."""
    sys.setswitchinterval(interval)


class WorkLimiter:
    """At most `in_flight` heavy requests at once, `waiting` more queued for `wait_seconds`."""

    def __init__(self, in_flight: int = 4, waiting: int = 256, wait_seconds: float = 30.0):
        self.in_flight, self.max_waiting, self.wait_seconds = in_flight, waiting, wait_seconds
        self._slots = asyncio.Semaphore(in_flight)
        self.waiting = 0
        self.refused = 0

    def _busy(self, kind: str, why: str) -> web.HTTPException:
        self.refused += 1
        _busy_log.log(logging.WARNING, kind, "refused a request with 503: %s", why)
        return json_error(503, f"busy: {why}; retry later", headers={"Retry-After": "1"})

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._slots.locked() and self.waiting >= self.max_waiting:
            raise self._busy("queue full", f"{self.in_flight} requests in work and {self.waiting} waiting")
        self.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), self.wait_seconds)
        except TimeoutError:
            raise self._busy("no turn", f"no turn within {self.wait_seconds:.0f} s") from None
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            self._slots.release()

    def middleware(self) -> Callable[..., Awaitable[web.StreamResponse]]:
        """The app middleware: HEAVY_PATHS take a slot while their handler runs (not while their
        body is sent: that is SlicedBody's business)."""

        @web.middleware
        async def limit(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                        ) -> web.StreamResponse:
            if not request.path.startswith(HEAVY_PATHS):
                return await handler(request)
            async with self.slot():
                return await handler(request)

        return limit


class HeapFreezer:
    """Keeps the long-lived facts out of the cyclic garbage collector's full passes.

    At 10,000 datasets the facts are about a million objects, and a full collection over
    them held the GIL for 310 ms (gc.callbacks, docs/reliability.md): the event loop, and
    /healthz with it, stood still. After each command refresh `freeze()` moves every object
    alive to the permanent generation (gc.freeze; reference counting still frees them).
    Cyclic garbage frozen along would never be collected, so every `unfreeze_every` seconds the
    heap is unfrozen first and the next full pass, one pause, collects it.
    """

    def __init__(self, unfreeze_every: float = 600.0):
        self.unfreeze_every = unfreeze_every
        self._unfrozen_at = time.monotonic()

    def freeze(self) -> None:
        if time.monotonic() - self._unfrozen_at >= self.unfreeze_every:
            gc.unfreeze()
            self._unfrozen_at = time.monotonic()
            return
        gc.freeze()
