"""The API token: what a client beyond loopback must show.

A request from the host itself (loopback) is trusted, as for node_exporter on its default
address. From anywhere else, every endpoint but /healthz and /metrics (which Prometheus
scrapes; the unit's IPAddressAllow and the listen address limit who can) needs
`Authorization: Bearer <api_token>`, compared in constant time. The settings refuse a
non-loopback listen address without a token (advisor/settings.py), so this is always armed
when it matters.
"""
from __future__ import annotations

import hmac
import ipaddress
from typing import Awaitable, Callable

from aiohttp import web

from advisor.api.errors import json_error
from advisor.appkeys import SETTINGS

OPEN_PATHS = ("/healthz", "/metrics")


def is_loopback(remote: str | None) -> bool:
    if not remote:
        return False  # a UNIX socket or an unknown peer is not assumed local
    try:
        return ipaddress.ip_address(remote.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def token_matches(header: str | None, token: str) -> bool:
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


@web.middleware
async def token_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    if request.path in OPEN_PATHS or is_loopback(request.remote):
        return await handler(request)
    token = request.app[SETTINGS].api_token
    if token is None:
        raise json_error(403, "this endpoint answers only on loopback unless api_token is set")
    if not token_matches(request.headers.get("Authorization"), token.get_secret_value()):
        raise json_error(401, "this endpoint needs 'Authorization: Bearer <api_token>' from beyond loopback")
    return await handler(request)
