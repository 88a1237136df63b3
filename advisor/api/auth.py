"""Who may ask: the API token, and basic auth from the web config file.

Without basic auth (no `basic_auth_users` in the web config file): a request from the host
itself (loopback) is trusted, as for node_exporter on its default address, when its Host header
names this host (an address, `localhost` or the host name: a web page whose name was re-pointed at
127.0.0.1, DNS rebinding, sends its own). From anywhere else, every endpoint but /healthz and /metrics (which Prometheus scrapes; the unit's
IPAddressAllow and the listen address limit who can) needs `Authorization: Bearer
<api_token>`, compared in constant time.

With basic auth: as node_exporter with the same file, every request to every endpoint,
/metrics and /healthz included and from loopback too, needs the credentials of one of the
users; the bearer api_token, when set, is accepted instead of them.

An endpoint that starts work (`starts_work`) needs the token from every client, checked before
its body is read.

The settings refuse a non-loopback listen address without a token or TLS with basic auth
(advisor/config/settings.py, advisor/config/webconfig.py), so this is always armed when it matters.
"""
from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Awaitable, Callable

from aiohttp import web

from advisor.api.appkeys import PASSWORDS, SETTINGS, WEB_CONFIG
from advisor.server.errors import json_error

OPEN_PATHS = ("/healthz", "/metrics")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_STARTS_WORK = "zfs_advisor_starts_work"  # a handler's attribute (starts_work): what the work is


def is_loopback(remote: str | None) -> bool:
    if not remote:
        return False  # a UNIX socket or an unknown peer is not assumed local
    try:
        return ipaddress.ip_address(remote.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def token_matches(header: str | None, token: str) -> bool:
    """`Authorization: Bearer <token>`; an empty token or credentials never match (the settings
    refuse an empty api_token, advisor/config/settings.py; this holds without them)."""
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
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if (work := getattr(request.match_info.handler, _STARTS_WORK, None)) is not None:
        require_token(request, work)
    token = request.app[SETTINGS].api_token
    web_config = request.app[WEB_CONFIG]
    header = request.headers.get("Authorization")
    if token is not None and token_matches(header, token.get_secret_value()):
        return await handler(request)
    if web_config.basic_auth:
        if await request.app[PASSWORDS].check(header, request.remote, web_config.users, request.transport):
            return await handler(request)
        raise unauthorized("this server needs basic auth (a user of the web config file)"
                           + (" or 'Authorization: Bearer <api_token>'" if token is not None else ""),
                           header, basic=True, bearer=token is not None)
    if is_loopback(request.remote):
        check_local_host(request.headers.get("Host"))
        return await handler(request)
    if request.path in OPEN_PATHS:
        return await handler(request)
    if token is None:
        raise json_error(403, "this endpoint answers only on loopback unless api_token is set")
    raise unauthorized("this endpoint needs 'Authorization: Bearer <api_token>' from beyond loopback", header,
                       basic=False, bearer=True)


# Names a request trusted for coming from loopback may give in its Host header, besides IP
# literals: a page whose name an attacker re-points at 127.0.0.1 (DNS rebinding) sends its own
# name there, and the browser then lets it read the answers.
LOCAL_NAMES = frozenset({"localhost", socket.gethostname().lower()})


def check_local_host(host: str | None) -> None:
    """403 unless `host` (the Host header; none is fine: no browser omits it) names this host:
    an IP address, `localhost` (or a name under it, RFC 6761) or the host's own name."""
    if host is None:
        return
    name = host.strip().lower()
    name = name[1:name.index("]")] if name.startswith("[") and "]" in name else name.rsplit(":", 1)[0]
    try:
        ipaddress.ip_address(name)
        return
    except ValueError:
        pass
    if name.rstrip(".") in LOCAL_NAMES or name.rstrip(".").endswith(".localhost"):
        return
    raise json_error(403, f"Host {host[:80]!r} does not name this host: a request trusted for coming from loopback "
                     "must name it by address, 'localhost' or its host name (a page re-pointed at 127.0.0.1 "
                     "sends its own name), or carry the api_token", valid=sorted(LOCAL_NAMES) + ["<an IP address>"])


def starts_work(what: str) -> Callable[[Handler], Handler]:
    """Marks a handler that starts work on the host: it needs the token from every client, and
    auth_middleware checks it before the request's body is read (advisor/server/body.py)."""
    def mark(handler: Handler) -> Handler:
        setattr(handler, _STARTS_WORK, what)
        return handler
    return mark


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
