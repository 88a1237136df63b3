"""Heavy responses under load: one build per facts generation, bodies sent in slices.

At 10,000 datasets a /metrics body is tens of megabytes of text and /v1/facts about 20 MB of
JSON. Built once per request, 50 concurrent clients cost gigabytes and stall the event loop
(docs/reliability.md has the numbers). So:

* `SharedBodies`: a body is built once per collection (FactsProvider hands out one
  `Collection` per generation) and variant (OpenMetrics, gzip), in a worker thread;
  concurrent requests await the same task, later ones get the bytes. Only the newest
  generation is kept.
* `WorkLimiter` (advisor/server/limits.py) bounds the heavy requests in work at once.
* `SlicedBody`: a body (bytes, chunks never joined, or deflate segments inflated a slice at a
  time) is written in slices, each waiting for the socket to drain and then for a turn of the
  event loop, so a slow reader holds about one slice in this process (the transport's buffer and
  the inflater's window), not a copy of the whole body, and a fast one does not hold the loop.
  A reader that takes nothing is dropped after the write timeout (advisor/server/errors.py).
"""
from __future__ import annotations

import asyncio
import weakref
import zlib
from collections.abc import Awaitable, Callable, Hashable, Iterator
from typing import Any

from aiohttp import payload, web

from advisor.process.memory import release_freed_memory
from advisor.server.deflated import RAW_DEFLATE, Deflated, inflate
from advisor.server.facts_body import FactsJson

# 2,000 clients that never read held 1.2 GB with 256 KiB slices and whole 256 KiB segments
# inflated per response (tests/bench/hostile.py, docs/reliability.md).
SLICE = 32 * 1024


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

    def _all(self) -> bytes:
        chunks = reversed(self._unsent)
        return b"".join(map(inflate, chunks) if self._deflated else chunks)

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
            for piece in _inflated_slices(chunk) if self._deflated else _slices(chunk):
                piece = piece[:left]
                await writer.write(piece)  # aiohttp drains once its buffer passes 64 KB
                # and a drain returns at once while the kernel takes the bytes: without a turn of the
                # loop here, one response to a fast reader went out whole, megabytes, while
                # /healthz waited
                await asyncio.sleep(0)
                left -= len(piece)
                if left <= 0:
                    break
            del chunk


def _slices(chunk: bytes) -> Iterator[memoryview]:
    view = memoryview(chunk)
    return (view[start:start + SLICE] for start in range(0, len(view), SLICE))


def _inflated_slices(segment: bytes) -> Iterator[bytes]:
    """A deflate segment's bytes, SLICE at a time (about 0.1 ms of zlib each: on the loop)."""
    inflater = zlib.decompressobj(RAW_DEFLATE)
    pending = segment
    while True:  # until a call gives nothing more: zlib may hold output after taking all the input
        piece = inflater.decompress(pending, SLICE)
        pending = inflater.unconsumed_tail
        if not piece and not pending:
            break
        if piece:
            yield piece
    if rest := inflater.flush():
        yield rest


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


class Bodies:
    """The app's shared bodies, one SharedBodies per endpoint (and one for the pages), and the /v1/facts chunk renderer."""

    def __init__(self) -> None:
        self.metrics = SharedBodies()
        self.facts = SharedBodies()
        self.recommend = SharedBodies(max_variants=256)
        self.page = SharedBodies()  # the HTML pages (advisor/api/page.py)
        self.facts_json = FactsJson()
