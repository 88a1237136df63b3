"""Every error is JSON: {"error": {"status", "reason", "valid"?}}; never a traceback."""
from __future__ import annotations

import json
import logging
from typing import Any, Awaitable, Callable

from aiohttp import web

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
        if isinstance(exc, web.HTTPMethodNotAllowed):
            extra["valid"] = sorted(exc.allowed_methods)
        if isinstance(exc, web.HTTPNotFound):
            extra["valid"] = sorted(
                {r.resource.canonical for r in request.app.router.routes() if r.resource is not None}
            )
        reason = exc.reason if exc.text in (None, "", f"{exc.status}: {exc.reason}") else exc.text
        return web.json_response({"error": {"status": exc.status, "reason": reason, **extra}}, status=exc.status)
    except Exception:
        log.exception("unhandled error serving %s %s", request.method, request.path)
        return web.json_response(
            {"error": {"status": 500, "reason": "internal error; the service log has the details"}}, status=500
        )
