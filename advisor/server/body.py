"""Request bodies, read in full before the request takes a work slot (WorkLimiter,
advisor/server/limits.py) and after its credentials are checked (advisor/api/auth.py): a client
trickling its body a byte at a time holds its own connection, never one of the few slots every
heavy endpoint shares, and that connection may be closed for a new client at the connection
limit. The read has a deadline (408) and a size limit (413); a body in any Content-Encoding but
identity is refused (415) before a byte of it is read. A handler takes the bytes from
`request[RAW_BODY]`."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

from advisor.server.errors import holding_up, json_error

# The largest body any endpoint takes (POST /v1/probes' JSON is well under it).
MAX_BODY_BYTES = 16 << 10
# The whole body, from its first byte to its last, within this many seconds.
BODY_READ_TIMEOUT_SECONDS = 10.0
# a typed key where aiohttp has them (newer versions warn about string keys); a string in older ones
RAW_BODY = web.RequestKey("raw_body", bytes) if hasattr(web, "RequestKey") else "zfs_advisor.raw_body"
WITH_BODY = ("POST", "PUT", "PATCH")


async def read_body(request: web.Request, max_bytes: int = MAX_BODY_BYTES, timeout: float | None = None) -> bytes:
    """The request's body; 413 beyond `max_bytes` (said up front or counted as it comes), 408 when
    it has not all arrived within `timeout` seconds (the connection closes: the rest of the body
    cannot be told from a next request). A client that goes away raises ConnectionError."""
    if request.content_length is not None and request.content_length > max_bytes:
        raise json_error(413, f"request body larger than {max_bytes} bytes", headers={"Connection": "close"})
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):  # aiohttp would inflate it: a small body, a large request
        raise json_error(415, f"Content-Encoding {encoding[:40]!r} is not taken", valid=["identity"],
                         headers={"Connection": "close"})
    timeout = BODY_READ_TIMEOUT_SECONDS if timeout is None else timeout
    data = b""
    try:
        with holding_up(request):
            async with asyncio.timeout(timeout):
                while chunk := await request.content.read(max_bytes + 1 - len(data)):
                    data += chunk
                    if len(data) > max_bytes:  # a chunked body says no length up front
                        raise json_error(413, f"request body larger than {max_bytes} bytes",
                                         headers={"Connection": "close"})
    except TimeoutError:
        raise json_error(408, f"the request body did not arrive within {timeout:g} s ({len(data)} bytes came)",
                         headers={"Connection": "close"}) from None
    return data


@web.middleware
async def body_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Reads the body of a request to a route that takes one (not of a 404 or 405) first."""
    if request.method in WITH_BODY and request.match_info.http_exception is None:
        request[RAW_BODY] = await read_body(request)
    return await handler(request)
