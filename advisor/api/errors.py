"""Every error is JSON: {"error": {"status", "reason", "valid"?}}; never a traceback."""
from __future__ import annotations

import json
import logging
import time
from typing import Any, Awaitable, Callable

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

log = logging.getLogger(__name__)


def json_error(status: int, reason: str, **extra: Any) -> web.HTTPException:
    """An HTTP error whose body is the JSON error document (raise it)."""
    body = json.dumps({"error": {"status": status, "reason": reason, **extra}})
    return _BY_STATUS[status](text=body, content_type="application/json")


_BY_STATUS: dict[int, type[web.HTTPException]] = {
    400: web.HTTPBadRequest,
    401: web.HTTPUnauthorized,
    403: web.HTTPForbidden,
    404: web.HTTPNotFound,
    409: web.HTTPConflict,
    422: web.HTTPUnprocessableEntity,
    503: web.HTTPServiceUnavailable,
}


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
    except Exception:
        log.exception("unhandled error serving %s %s", request.method, request.path)
        return web.json_response(
            {"error": {"status": 500, "reason": "internal error; the service log has the details"}}, status=500
        )


class _JsonErrorRequestHandler(RequestHandler):
    """aiohttp's connection handler, answering its own errors (a request line or header too
    long, too many headers, bytes that are not HTTP) with the JSON error document, logged as
    one line instead of an ERROR with a traceback: a hostile or broken client is not a fault
    of the service."""

    __slots__ = ()
    _last_warning = 0.0  # at most one warning per WARN_EVERY seconds; the rest at debug level
    WARN_EVERY = 10.0

    def handle_error(self, request, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if status >= 500:  # not a client's doing: aiohttp's own handling and log
            return super().handle_error(request, status, exc, message)
        reason = " ".join(str(getattr(exc, "message", None) or exc or message or "bad request").split())[:200]
        now = time.monotonic()
        level = logging.WARNING if now - _JsonErrorRequestHandler._last_warning >= self.WARN_EVERY else logging.DEBUG
        if level == logging.WARNING:
            _JsonErrorRequestHandler._last_warning = now
        log.log(level, "refused a malformed request from %s: %s", request.remote, reason)
        if request.writer.output_size > 0:
            raise ConnectionError("response already started, cannot answer the error")
        resp = web.json_response({"error": {"status": status, "reason": reason}}, status=status)
        resp.force_close()
        return resp


class _JsonErrorServer(web.Server):
    def __call__(self) -> RequestHandler:
        handler = super().__call__()
        handler.__class__ = _JsonErrorRequestHandler  # same slots: only handle_error differs
        return handler


class JsonErrorAppRunner(web.AppRunner):
    """web.AppRunner whose connections answer aiohttp's own parser errors as JSON 4xx."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _JsonErrorServer
        return server
