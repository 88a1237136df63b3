"""Heavy responses under load: bounded work, one build per facts generation, bodies sent in slices.

At 10,000 datasets a /metrics body is tens of megabytes of text and /v1/facts about 20 MB of
JSON. Built once per request, 50 concurrent clients cost gigabytes and stall the event loop
(docs/reliability.md has the numbers). So:

* `SharedBodies`: a body is built once per collection (FactsProvider hands out one
  `Collection` per generation) and variant (OpenMetrics, gzip), in a worker thread;
  concurrent requests await the same task, later ones get the bytes. Only the newest
  generation is kept.
* `WorkLimiter`: at most `in_flight` heavy requests run at once; up to `waiting` more wait
  their turn for at most `wait_seconds`; beyond that a request gets 503 with Retry-After at
  once instead of piling up. /healthz never passes through it.
* `SlicedBody`: a body (bytes, chunks never joined, or deflate segments inflated as they go)
  is written in slices, each waiting for the socket to drain and then for a turn of the event
  loop, so a slow reader holds one slice in the transport's buffer, not a copy of the whole
  body, and a fast one does not hold the loop.
"""
from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import logging
import sys
import weakref
from typing import Any, AsyncIterator, Awaitable, Callable, Hashable

HEAVY_PATHS = ("/metrics", "/v1/facts", "/recommend", "/v1/pools", "/v1/probes")

from aiohttp import payload, web

from advisor.deflated import Deflated, inflate
from advisor.api.errors import json_error
from advisor.api.facts_body import FactsJson
from advisor.logs import RateLimitedLog
from advisor.memory import release_freed_memory

log = logging.getLogger(__name__)
_busy_log = RateLimitedLog(log, interval=60.0)

SLICE = 256 * 1024


# a body in one piece, in chunks sent one after the other, or deflated and sent inflated
Body = bytes | tuple[bytes, ...] | Deflated


class SlicedBody(payload.Payload):
    """A body (bytes, a tuple of byte chunks never joined into one, or deflate segments)
    written SLICE at a time, draining the socket and letting the event loop run between slices.

    It lets go of each chunk once the chunk is sent: when a new generation's body replaces this
    one, the old chunks are freed as the responses still sending them move on, instead of all of
    them staying alive (a second /v1/facts body) until the slowest of those responses ends."""

    _size: int  # payload.Payload's, which may be None there: a body in memory has its size

    def __init__(self, body: Body, content_type: str) -> None:
        self._deflated = isinstance(body, Deflated)
        if isinstance(body, Deflated):
            chunks, self._size = list(body.segments), body.size
        else:
            chunks = [body] if isinstance(body, bytes) else list(body)
            self._size = sum(len(c) for c in chunks)
        super().__init__(None, content_type=content_type)
        self._unsent = chunks[::-1]  # popped from the end: the next chunk to send is last

    def _plain(self, chunk: bytes) -> bytes:
        return inflate(chunk) if self._deflated else chunk

    def _all(self) -> bytes:
        return b"".join(self._plain(chunk) for chunk in reversed(self._unsent))

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self._all().decode(encoding, errors)

    async def as_bytes(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return self._all()

    async def write(self, writer: Any) -> None:
        await self.write_with_length(writer, None)

    async def write_with_length(self, writer: Any, content_length: int | None) -> None:
        left = self._size if content_length is None else min(content_length, self._size)
        while self._unsent and left > 0:
            # popped: the chunk is free to go once sent, unless another response holds it
            chunk = self._unsent.pop()
            if self._deflated:  # a segment (at most 256 KB inflated) in a worker thread: zlib lets go of the GIL
                chunk = await asyncio.to_thread(inflate, chunk)
            view = memoryview(chunk)[:left]
            del chunk
            for start in range(0, len(view), SLICE):
                await writer.write(view[start:start + SLICE])  # aiohttp drains once its buffer passes 64 KB
                # and a drain returns at once while the kernel takes the bytes: without a turn of the
                # loop here, one response to a fast reader went out whole, megabytes, while
                # /healthz waited
                await asyncio.sleep(0)
            left -= len(view)
            del view


def body_response(body: Body, headers: dict[str, str]) -> web.Response:
    """A response of ready bytes (headers carry Content-Type and any Content-Encoding)."""
    return web.Response(body=SlicedBody(body, content_type=headers.get("Content-Type", "application/octet-stream")),
                        headers=headers)


class SharedBodies:
    """Bodies built once per generation and variant; the newest generation's are kept, at most
    `max_variants` of them (beyond that a body is built for its request alone: a client asking
    ever new variants, such as /recommend queries, cannot grow the cache)."""

    def __init__(self, max_variants: int = 64) -> None:
        self.max_variants = max_variants
        # The generation's object, weakly: the bodies are bytes, and holding a Collection would
        # keep its facts, and the `zfs get` parse they came from, alive after the provider
        # replaced it (a second parse of 10,000 datasets, docs/reliability.md).
        self._holds: weakref.ref[object] | None = None
        self._tasks: dict[Hashable, asyncio.Future[Body]] = {}
        self.builds = 0  # bodies built (tests: concurrent requests of one generation build once)

    async def get(self, owner: object, variant: Hashable, build: Callable[[], Awaitable[Body]]) -> Body:
        """The body of `variant` for the generation `owner` (a Collection), built by `build` once."""
        if self._holds is None or self._holds() is not owner:
            self._tasks.clear()  # an older generation's bodies go (requests still sending them keep theirs)
            self._holds = weakref.ref(owner)
        task = self._tasks.get(variant)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            task = asyncio.ensure_future(self._build(build))
            if variant in self._tasks or len(self._tasks) < self.max_variants:
                self._tasks[variant] = task
        # shield: a client that gives up must not cancel the build the others wait for
        return await asyncio.shield(task)

    async def _build(self, build: Callable[[], Awaitable[Body]]) -> Body:
        self.builds += 1
        try:
            return await build()
        finally:
            await asyncio.to_thread(release_freed_memory)


# How long a worker thread may keep the GIL while the event loop asks for it (Python's default
# is 5 ms). The loop gives the GIL up for every select() and socket send; with a render or a
# command parse running in a thread it waited up to 5 ms to get it back each time, and tens of
# sends per turn of the loop made /healthz wait hundreds of milliseconds (docs/reliability.md).
LOOP_SWITCH_INTERVAL_SECONDS = 0.0005


def favour_the_event_loop(interval: float = LOOP_SWITCH_INTERVAL_SECONDS) -> None:
    """Shorten the GIL switch interval (sys.setswitchinterval) for the service process."""
    sys.setswitchinterval(interval)


class Bodies:
    """The app's shared bodies, one SharedBodies per endpoint (and one for the pages), and the /v1/facts chunk renderer."""

    def __init__(self) -> None:
        self.metrics = SharedBodies()
        self.facts = SharedBodies()
        self.recommend = SharedBodies(max_variants=256)
        self.page = SharedBodies()  # the HTML pages (advisor/api/page.py)
        self.facts_json = FactsJson()


class WorkLimiter:
    """At most `in_flight` heavy requests at once, `waiting` more queued for `wait_seconds`."""

    def __init__(self, in_flight: int = 4, waiting: int = 256, wait_seconds: float = 30.0):
        self.in_flight, self.max_waiting, self.wait_seconds = in_flight, waiting, wait_seconds
        self._slots = asyncio.Semaphore(in_flight)
        self.waiting = 0
        self.refused = 0

    def _busy(self, why: str) -> web.HTTPException:
        self.refused += 1
        _busy_log.log(logging.WARNING, why, "refused a request with 503: %s", why)
        return json_error(503, f"busy: {why}; retry later", headers={"Retry-After": "1"})

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._slots.locked() and self.waiting >= self.max_waiting:
            raise self._busy(f"{self.in_flight} requests in work and {self.waiting} waiting")
        self.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), self.wait_seconds)
        except TimeoutError:
            raise self._busy(f"no turn within {self.wait_seconds:.0f} s") from None
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
