"""One instant query of a Prometheus HTTP API (`GET /api/v1/query`, which Thanos Query and Mimir
serve too), with the [fleet] settings' TLS, authentication and deadline.  Any failure (refused,
slow, not JSON, an error status) is a FleetUnavailable saying why; a token or password never
appears in it."""
from __future__ import annotations

import asyncio
import base64
import json
import ssl
from typing import Any

import aiohttp

from advisor.config.settings import FleetSettings


class FleetUnavailable(Exception):
    """The fleet's Prometheus could not be read; the message says why."""


def _secret(path: Any) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise FleetUnavailable(f"cannot read {path}: {exc.strerror}") from None


def request_options(settings: FleetSettings) -> dict[str, Any]:
    """aiohttp's keyword arguments for a request: TLS and the authentication header."""
    headers = {}
    if settings.bearer_token_file is not None:
        headers["Authorization"] = f"Bearer {_secret(settings.bearer_token_file)}"
    if settings.basic_auth_username is not None and settings.basic_auth_password_file is not None:
        # the header itself (RFC 7617): aiohttp.BasicAuth is deprecated in the aiohttp this runs on
        pair = f"{settings.basic_auth_username}:{_secret(settings.basic_auth_password_file)}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    tls: ssl.SSLContext | bool | None = None
    if settings.insecure_skip_verify:
        tls = False
    elif settings.ca_file is not None:
        try:
            tls = ssl.create_default_context(cafile=str(settings.ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise FleetUnavailable(f"cannot use ca_file {settings.ca_file}: {exc}") from None
    return {"headers": headers, "ssl": tls}


async def instant_query(session: aiohttp.ClientSession, settings: FleetSettings, expr: str,
                        options: dict[str, Any]) -> list[Any]:
    """The `result` of an instant query whose resultType is a vector."""
    url = f"{settings.prometheus_url}/api/v1/query"
    try:
        async with asyncio.timeout(settings.timeout_seconds):
            async with session.get(url, params={"query": expr}, **options) as resp:
                text = await resp.text()
    except TimeoutError:
        raise FleetUnavailable(f"{url}: no answer within {settings.timeout_seconds:g} s") from None
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        raise FleetUnavailable(f"{url}: {exc.__class__.__name__}: {exc}") from None
    try:
        body = json.loads(text)
    except ValueError:
        raise FleetUnavailable(f"{url}: HTTP {resp.status}, not JSON") from None
    if not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error") if isinstance(body, dict) else None
        raise FleetUnavailable(f"{url}: HTTP {resp.status}, {str(error)[:200] if error else 'no success status'}")
    data = body.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise FleetUnavailable(f"{url}: {expr}: not a vector")
    return data["result"]
