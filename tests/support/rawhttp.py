"""HTTP over raw sockets against the real app, served as `zfs-advisor serve` serves it
(JsonErrorAppRunner and GuardedSite on 127.0.0.1): for requests no well-behaved client library would send."""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from advisor.server.connections import GuardedSite
from advisor.server.errors import JsonErrorAppRunner

Response = tuple[int, dict[str, str], bytes]


class Errors(logging.Handler):
    """Every record at ERROR or above, wherever it is logged."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@dataclass
class Served:
    port: int
    errors: Errors  # the ERROR records logged meanwhile
    runner: JsonErrorAppRunner


@contextlib.asynccontextmanager
async def serving(app: web.Application, ssl_context: ssl.SSLContext | None = None,
                  **runner: Any) -> AsyncIterator[Served]:
    """The app on a free loopback port, as `zfs-advisor serve` serves it (with TLS if `ssl_context`)."""
    serve = JsonErrorAppRunner(app, handle_signals=False, **runner)
    await serve.setup()
    site = GuardedSite(serve, "127.0.0.1", 0, ssl_context=ssl_context)  # loopback only
    await site.start()
    errors = Errors()
    logging.getLogger().addHandler(errors)
    try:
        yield Served(serve.addresses[0][1], errors, serve)
    finally:
        logging.getLogger().removeHandler(errors)
        await serve.cleanup()


async def exchange(port: int, payload: bytes, timeout: float = 1.5) -> list[Response]:
    """Send `payload`, read until the server closes (or the deadline); -> the responses read."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        if payload.endswith(b"Host:"):  # a client that gives up half way
            writer.close()
            return []
        data = b""
        try:
            async with asyncio.timeout(timeout):
                while chunk := await reader.read(65536):
                    data += chunk
        except TimeoutError:
            pass  # a keep-alive connection the server keeps open for more: what it said so far counts
    except (ConnectionResetError, BrokenPipeError):
        data = b""  # the server closed on us mid-send: no answer, no crash
    finally:
        writer.close()
    return responses(data)


def responses(data: bytes) -> list[Response]:
    out = []
    while data.startswith(b"HTTP/"):
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", len(rest)))
        out.append((status, headers, rest[:length]))
        data = rest[length:]
    return out


def judge(answers: list[Response]) -> str | None:
    """None if the answers are acceptable (no 5xx, every error a JSON document), else what is wrong."""
    for status, headers, body in answers:
        if status >= 500:
            return f"status {status}: {body[:200]!r}"
        if status >= 400:
            if not headers.get("content-type", "").startswith("application/json"):
                return f"status {status} is not JSON: {headers.get('content-type')} {body[:200]!r}"
            error = json.loads(body)["error"]
            if error["status"] != status or not error["reason"]:
                return f"bad error document {error}"
            if status == 405 and not headers.get("allow"):
                return "405 without an Allow header"
    return None


def get(target: str, headers: str = "") -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n".encode()
