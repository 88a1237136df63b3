"""Who may ask: the API token, and basic auth from the web config file.

Without basic auth (no `basic_auth_users` in the web config file): a request from the host
itself (loopback) is trusted, as for node_exporter on its default address. From anywhere
else, every endpoint but /healthz and /metrics (which Prometheus scrapes; the unit's
IPAddressAllow and the listen address limit who can) needs `Authorization: Bearer
<api_token>`, compared in constant time.

With basic auth: as node_exporter with the same file, every request to every endpoint,
/metrics and /healthz included and from loopback too, needs the credentials of one of the
users; the bearer api_token, when set, is accepted instead of them.

The settings refuse a non-loopback listen address without a token or TLS with basic auth
(advisor/settings.py, advisor/webconfig.py), so this is always armed when it matters.
"""
from __future__ import annotations

import hmac
import ipaddress
from typing import Awaitable, Callable

from aiohttp import web

from advisor.server.errors import json_error
from advisor.appkeys import PASSWORDS, SETTINGS, WEB_CONFIG

OPEN_PATHS = ("/healthz", "/metrics")


def is_loopback(remote: str | None) -> bool:
    if not remote:
        return False  # a UNIX socket or an unknown peer is not assumed local
    try:
        return ipaddress.ip_address(remote.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def token_matches(header: str | None, token: str) -> bool:
    """`Authorization: Bearer <token>`; an empty token or credentials never match (the settings
    refuse an empty api_token, advisor/settings.py; this holds without them)."""
    scheme, _, given = (header or "").partition(" ")
    given = given.strip()
    return (scheme.lower() == "bearer" and bool(given) and bool(token)
            and hmac.compare_digest(given.encode(), token.encode()))


REALM = 'realm="zfs-advisor"'


def unauthorized(reason: str, header: str | None, basic: bool, bearer: bool) -> web.HTTPException:
    """A 401 with a challenge per scheme the server accepts (RFC 9110 11.6.1: a 401 carries
    WWW-Authenticate): Basic (RFC 7617) and/or Bearer (RFC 6750 section 3, with
    error="invalid_token" when a bearer token was sent and is not the one)."""
    error = json_error(401, reason)
    if basic:
        error.headers.add("WWW-Authenticate", f'Basic {REALM}, charset="UTF-8"')
    if bearer:
        sent = (header or "").partition(" ")[0].lower() == "bearer"
        error.headers.add("WWW-Authenticate", f'Bearer {REALM}' + (', error="invalid_token"' if sent else ""))
    return error


@web.middleware
async def auth_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    token = request.app[SETTINGS].api_token
    web_config = request.app[WEB_CONFIG]
    if web_config.basic_auth:
        header = request.headers.get("Authorization")
        if ((token is not None and token_matches(header, token.get_secret_value()))
                or await request.app[PASSWORDS].check(header, request.remote, web_config.users)):
            return await handler(request)
        raise unauthorized("this server needs basic auth (a user of the web config file)"
                           + (" or 'Authorization: Bearer <api_token>'" if token is not None else ""),
                           header, basic=True, bearer=token is not None)
    if request.path in OPEN_PATHS or is_loopback(request.remote):
        return await handler(request)
    if token is None:
        raise json_error(403, "this endpoint answers only on loopback unless api_token is set")
    header = request.headers.get("Authorization")
    if not token_matches(header, token.get_secret_value()):
        raise unauthorized("this endpoint needs 'Authorization: Bearer <api_token>' from beyond loopback", header,
                           basic=False, bearer=True)
    return await handler(request)


def require_token(request: web.Request, what: str) -> None:
    """Endpoints that start work need the token from every client, loopback included: 403 when
    none is configured (saying how), 401 when it is missing or wrong."""
    token = request.app[SETTINGS].api_token
    if token is None:
        raise json_error(403, f"{what}: it needs api_token, and none is configured. Set api_token = \"<a long random "
                         "string>\" in the config file (/etc/zfs-advisor/config.toml, or ZFS_ADVISOR_API_TOKEN), "
                         "restart the service and send 'Authorization: Bearer <api_token>'")
    header = request.headers.get("Authorization")
    if not token_matches(header, token.get_secret_value()):
        raise unauthorized(f"{what}: it needs 'Authorization: Bearer <api_token>'", header, basic=False, bearer=True)
