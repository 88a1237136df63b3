"""Every error is JSON: {"error": {"status", "reason", "valid"?}}; never a traceback."""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from advisor.process.logs import RateLimitedLog
from advisor.server.connections import ConnectionGuard, default_max_connections

log = logging.getLogger(__name__)


def json_error(status: int, reason: str, headers: dict[str, str] | None = None, valid: Sequence[str] | None = None,
               **extra: Any) -> web.HTTPException:
    """An HTTP error whose body is the JSON error document (raise it); `valid`, the choices that
    would have been accepted, is left out when None."""
    body = json.dumps({"error": {"status": status, "reason": reason,
                                 **({"valid": valid} if valid is not None else {}), **extra}})
    return _BY_STATUS[status](text=body, content_type="application/json", headers=headers)


_BY_STATUS: dict[int, type[web.HTTPException]] = {
    400: web.HTTPBadRequest,
    401: web.HTTPUnauthorized,
    403: web.HTTPForbidden,
    404: web.HTTPNotFound,
    408: web.HTTPRequestTimeout,
    409: web.HTTPConflict,
    413: type("HTTPPayloadTooLarge", (web.HTTPClientError,), {"status_code": 413}),  # aiohttp's wants sizes
    415: web.HTTPUnsupportedMediaType,
    422: web.HTTPUnprocessableEntity,
    429: web.HTTPTooManyRequests,
    503: web.HTTPServiceUnavailable,
}


_dropped = RateLimitedLog(log, interval=60.0)
_unhandled = RateLimitedLog(log, interval=60.0)


def route_of(request: web.BaseRequest) -> str:
    """The route a request matched (its pattern, never the client's text), for keying its log lines."""
    match = getattr(request, "match_info", None)
    resource = match.route.resource if match is not None else None
    return resource.canonical if resource is not None else "unrouted"


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.content_type == "application/json" or exc.status < 400:
            raise
        extra: dict[str, Any] = {}
        headers = {}
        if isinstance(exc, web.HTTPMethodNotAllowed):
            extra["valid"] = sorted(exc.allowed_methods)
            headers["Allow"] = ", ".join(extra["valid"])  # RFC 9110 15.5.6: a 405 names the methods
        if isinstance(exc, web.HTTPNotFound):
            extra["valid"] = sorted(
                {r.resource.canonical for r in request.app.router.routes() if r.resource is not None}
            )
        reason = exc.reason if exc.text in (None, "", f"{exc.status}: {exc.reason}") else exc.text
        return web.json_response({"error": {"status": exc.status, "reason": reason, **extra}}, status=exc.status,
                                 headers=headers)
    except ConnectionError as exc:
        # the client went away (mid-body, mid-response): not a fault of the service, so one
        # line at INFO, at most one a minute, no traceback; the answer goes nowhere
        _dropped.log(logging.INFO, "client closed", "a client closed the connection during %s %s: %s",
                     request.method, request.path[:64], exc or type(exc).__name__)
        return web.json_response({"error": {"status": 400, "reason": "the client closed the connection"}}, status=400)
    except Exception as exc:
        # with its traceback, but once a minute per route and kind of error: a request that
        # trips a bug must not be able to write a traceback per request
        _unhandled.log(logging.ERROR, f"{route_of(request)} {type(exc).__name__}", "unhandled error serving %s %s",
                       request.method[:16], request.path[:64], exc_info=True)
        return web.json_response(
            {"error": {"status": 500, "reason": "internal error; the service log has the details"}}, status=500
        )


# A request whose head has not arrived this long after the connection opened (or after the
# previous response) is dropped, and so is a connection idle that long: aiohttp's keep-alive
# timer, which also runs before the first request.
READ_TIMEOUT_SECONDS = 10.0
# A response the client does not read: the connection is dropped once its writer has waited this
# long for the client to take anything (asyncio pauses the writer while the transport's buffer is
# above its mark). Prometheus' own scrape timeout is 10 s by default.
WRITE_TIMEOUT_SECONDS = 10.0
# What a connection keeps in this process for a client that does not read (the kernel's socket
# buffers come first): the writer is paused above this, and a body is written in slices of
# advisor/server/bodies.py's SLICE on top of it. asyncio's default mark is 64 KiB.
WRITE_BUFFER_HIGH = 16 * 1024
# Connections whose request waits on its client, at most: beyond, the one waiting longest is
# dropped. A client that does not read holds about 170 KiB of the process (the transport's
# buffer, a slice, an inflater's window): 2,000 of them at 10,000 datasets took the service from
# 140 to 482 MB; at the unit's 3,904 connections they would pass its MemoryMax=768M.
MAX_HELD_UP = 1024
# A body the service answered without reading (a 401, 408, 413 or 415) is read and dropped for
# this long before the connection closes, so the client sees the answer rather than a reset
# (aiohttp's lingering close; its default is 10 s, which a client trickling bytes could use).
LINGERING_SECONDS = 2.0
_refusals = RateLimitedLog(log, interval=60.0)
_server_errors = RateLimitedLog(logging.getLogger("aiohttp.server"), interval=60.0)


class _JsonErrorRequestHandler(RequestHandler):
    """aiohttp's connection handler, answering its own errors (a request line or header too
    long, too many headers, bytes that are not HTTP) with the JSON error document, logged as
    one line (at most one per reason a minute) instead of an ERROR with a traceback: a hostile
    or broken client is not a fault of the service."""

    __slots__ = ()

    def handle_error(self, request, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if status >= 500:  # not a client's doing: aiohttp's own handling and log
            return super().handle_error(request, status, exc, message)
        reason = " ".join(str(getattr(exc, "message", None) or exc or message or "bad request").split())[:200]
        # keyed by the kind of refusal, not its text: no two malformed requests differ in that
        _refusals.log(logging.WARNING, f"{status} {type(exc).__name__}", "refused a malformed request from %s: %s",
                      request.remote, reason)
        if request.writer.output_size > 0:
            raise ConnectionError("response already started, cannot answer the error")
        resp = web.json_response({"error": {"status": status, "reason": reason}}, status=status)
        resp.force_close()
        return resp

    # The transport pauses the writer while its buffer is above WRITE_BUFFER_HIGH: a client that
    # stops reading. The server times it out and may close it for a new client.
    def pause_writing(self) -> None:
        super().pause_writing()
        if isinstance(self._manager, _JsonErrorServer):
            self._manager.client_holds_up(self, write_timeout=True)

    def resume_writing(self) -> None:
        super().resume_writing()
        if isinstance(self._manager, _JsonErrorServer):
            self._manager.client_caught_up(self)

    def log_exception(self, *args: Any, **kwargs: Any) -> None:
        """aiohttp's own tracebacks ("Unhandled exception", "Error handling request"), once a minute
        per message and kind of error."""
        exc = kwargs.setdefault("exc_info", True)
        kind = type(exc if isinstance(exc, BaseException) else sys.exc_info()[1]).__name__
        _server_errors.log(logging.ERROR, f"{args[0] if args else ''} {kind}", *args, **kwargs)


class _JsonErrorServer(web.Server):
    _since: dict[RequestHandler, float]  # when each connection was made (set by JsonErrorAppRunner)
    # connections whose request waits on its client (a response it does not read, a body it does
    # not send): since when, and the write timeout's timer (reading a body has its own deadline)
    _held_up: dict[RequestHandler, tuple[float, asyncio.TimerHandle | None]]
    _guard: ConnectionGuard

    def __call__(self) -> RequestHandler:
        handler = super().__call__()
        handler.__class__ = _JsonErrorRequestHandler  # same slots: only handle_error differs
        return handler

    def connection_made(self, handler: RequestHandler, transport) -> None:
        super().connection_made(handler, transport)
        self._since[handler] = time.monotonic()
        transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            self._guard.arrived(sock.fileno())

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        super().connection_lost(handler, exc)
        self._since.pop(handler, None)
        self.client_caught_up(handler)

    def client_holds_up(self, handler: RequestHandler, write_timeout: bool = False) -> None:
        """`handler`'s request waits on its client from now: the connection may be closed for a
        new one at the limit, and, with `write_timeout`, is closed after WRITE_TIMEOUT_SECONDS."""
        timer = (asyncio.get_running_loop().call_later(WRITE_TIMEOUT_SECONDS, self._write_timed_out, handler)
                 if write_timeout else None)
        self.client_caught_up(handler)
        self._held_up[handler] = (time.monotonic(), timer)
        if len(self._held_up) > MAX_HELD_UP:  # the first is the one waiting longest: dicts keep their order
            longest = next(iter(self._held_up))
            self.client_caught_up(longest)
            _refusals.log(logging.WARNING, "held up", "%d requests waiting on their clients: dropped the one "
                          "waiting longest (%s)", MAX_HELD_UP, _peer(longest))
            _drop(longest)

    def client_caught_up(self, handler: RequestHandler) -> None:
        _, timer = self._held_up.pop(handler, (0.0, None))
        if timer is not None:
            timer.cancel()

    def _write_timed_out(self, handler: RequestHandler) -> None:
        self._held_up.pop(handler, None)
        _refusals.log(logging.INFO, "write timeout", "dropped a client that read nothing of its response for "
                      "%g s (%s)", WRITE_TIMEOUT_SECONDS, _peer(handler))
        _drop(handler)

    def _reclaimable(self) -> tuple[RequestHandler, float] | None:
        """The connection that has held its slot longest without the service owing it anything,
        and since when: idle (or its request's head still arriving) since it was made, or its
        request waiting on the client since then."""
        oldest: tuple[RequestHandler, float] | None = None
        for handler in self._connections:
            if handler.transport is None or handler.transport.is_closing():
                continue
            if not handler._request_in_progress:
                since = self._since.get(handler, 0.0)
            elif handler in self._held_up:
                since = self._held_up[handler][0]
            else:
                continue
            if oldest is None or since < oldest[1]:
                oldest = (handler, since)
        return oldest

    def oldest_idle_since(self) -> float | None:
        """When the connection `_reclaimable` names began to hold its slot (advisor/server/connections.py
        decides what to do)."""
        oldest = self._reclaimable()
        return None if oldest is None else oldest[1]

    def close_oldest_idle(self) -> None:
        oldest = self._reclaimable()
        if oldest is not None:
            _drop(oldest[0])


def _drop(handler: RequestHandler) -> None:
    """Close `handler`'s connection at once, even with bytes unsent: its descriptor or memory is needed now."""
    if handler.transport is not None:
        handler.transport.abort()
    handler.force_close()


def _peer(handler: RequestHandler) -> str:
    peer = handler.transport.get_extra_info("peername") if handler.transport is not None else None
    return str(peer[0]) if isinstance(peer, tuple) and peer else "unknown peer"


@contextlib.contextmanager
def holding_up(request: web.BaseRequest) -> Iterator[None]:
    """`with holding_up(request):` around a wait on the client (reading its body): meanwhile its
    connection may be closed for a new one at the connection limit."""
    handler = request.protocol
    server = handler._manager if isinstance(handler._manager, _JsonErrorServer) else None
    if server is None:  # an app served some other way (aiohttp's test server): nothing to mark
        yield
        return
    server.client_holds_up(handler)
    try:
        yield
    finally:
        server.client_caught_up(handler)


class JsonErrorAppRunner(web.AppRunner):
    """web.AppRunner whose connections answer aiohttp's own parser errors as JSON 4xx, drop
    requests that do not arrive within `read_timeout` and clients that do not read their response
    within WRITE_TIMEOUT_SECONDS, keep at most about WRITE_BUFFER_HIGH bytes unsent per connection
    and, served by a GuardedSite (advisor/server/connections.py), stay within `max_connections`
    open sockets."""

    def __init__(self, app: web.Application, *, read_timeout: float = READ_TIMEOUT_SECONDS,
                 max_connections: int | None = None, **kwargs: Any) -> None:
        super().__init__(app, keepalive_timeout=read_timeout, lingering_time=LINGERING_SECONDS, **kwargs)
        self.guard = ConnectionGuard(max_connections or default_max_connections())

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _JsonErrorServer
        assert isinstance(server, _JsonErrorServer)  # for the type checker: the class set above
        server._since, server._held_up, server._guard = {}, {}, self.guard
        self.guard.idle = server
        return server


_loop_errors = RateLimitedLog(logging.getLogger("asyncio"), interval=60.0)


def loop_exception_handler(loop, context: dict[str, Any]) -> None:
    """asyncio's errors, at most one line per kind a minute (out of file descriptors, asyncio
    logs every failed accept(): 9 MB of the same line once)."""
    exc = context.get("exception")
    message = context.get("message", "event loop error")
    quiet = isinstance(exc, OSError)  # accept() out of resources: the message says it all
    _loop_errors.log(logging.ERROR, f"{message}: {type(exc).__name__}", "%s: %s", message, exc or "",
                     exc_info=None if quiet or exc is None else exc)
