"""Hostile requests over raw sockets against the real app, served as `zfs-advisor serve` serves it
(JsonErrorAppRunner, 127.0.0.1 only, a replayed lab snapshot): no 5xx, every error a JSON
document, no ERROR in the log, and the service still answers /healthz afterwards.

The loops are bounded (a fixed list of hand-made requests, then a fixed number of seeded
random byte strings; FAULT_SUITE=full runs more of them), and every connection has a deadline.
"""
from __future__ import annotations

import asyncio
import json
import logging
import random

import pytest
from aiohttp import web

from advisor.api.errors import JsonErrorAppRunner
from advisor.app import create_app
from advisor.settings import Settings
from support import HOSTS
from tests.fault.tally import FULL

SNAPSHOT = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"
RANDOM_CASES = 400 if FULL else 40


def _get(target: str, headers: str = "") -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n".encode()


HANDMADE: dict[str, bytes] = {
    "request line 20 KB": _get("/recommend?workload=" + "a" * 20000),
    "header value 20 KB": _get("/healthz", "X-Long: " + "b" * 20000 + "\r\n"),
    "header name 10 KB": _get("/healthz", "X" * 10000 + ": 1\r\n"),
    "200 headers": _get("/healthz", "".join(f"X-{i}: {i}\r\n" for i in range(200))),
    "10,000 headers": _get("/healthz", "".join(f"X-{i}: {i}\r\n" for i in range(10000))),
    "NUL and high bytes": b"\x00\xff\xfe GET / HTTP/1.1\r\n\r\n",
    "TLS client hello": bytes.fromhex("16030100a5010000a10303") + bytes(range(32)) + b"\x00" * 64,
    "bad method": b"G@T /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    "HTTP/9.9": b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
    "NUL in header name": b"GET /healthz HTTP/1.1\r\nHo\x00st: x\r\n\r\n",
    "CR without LF": b"GET /healthz HTTP/1.1\rHost: x\r\r\n",
    "space before colon": b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n",
    "smuggling CL+TE": b"POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "bad chunk size": b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "negative content length": b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    "two content lengths": b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "body on GET, 1 MB declared": b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\nabc",
    "path traversal": _get("/v1/facts/../../../../etc/passwd"),
    "encoded traversal": _get("/v1/%2e%2e/%2e%2e/etc/passwd"),
    "NUL in path": _get("/healthz%00"),
    "NUL in query": _get("/recommend?workload=postgres&pool=tank%00"),
    "shell in pool": _get("/recommend?workload=postgres&pool=tank;reboot"),
    "backticks in dataset": _get("/recommend?workload=postgres&dataset=tank/%60id%60"),
    "newline in dataset": _get("/recommend?workload=postgres&dataset=tank/pg%0A"),
    "dataset 256 chars": _get("/recommend?workload=postgres&dataset=tank/" + "x" * 251),
    "repeated parameter": _get("/recommend?workload=postgres&workload=backup"),
    "1,000 parameters": _get("/recommend?" + "&".join(f"p{i}=1" for i in range(1000))),
    "unknown workload parameter": _get("/recommend?workload=backup&page_size=8K"),
    "bad percent escapes": _get("/recommend?workload=%zz%"),
    "unicode path": _get("/\u202e\U0001f4a5".encode().decode("latin-1")),
    "absolute URI": b"GET http://evil.example/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "asterisk target": b"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "DELETE": b"DELETE /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "POST with body": b"POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    "no Host, HTTP/1.0": b"GET /healthz HTTP/1.0\r\n\r\n",
    "pipelined 50": b"".join(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" for _ in range(49)) + _get("/healthz"),
    "Accept text on error": _get("/recommend?workload=nope", "Accept: text/html\r\n"),
    "only CRLFs": b"\r\n" * 1000,
    "half a request then close": b"GET /healthz HTTP/1.1\r\nHost:",
}


class _Errors(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
async def server():
    runner = JsonErrorAppRunner(create_app(Settings(root=str(SNAPSHOT))), handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)  # loopback only
    await site.start()
    port = runner.addresses[0][1]
    errors = _Errors()
    logging.getLogger().addHandler(errors)
    try:
        yield port, errors
    finally:
        logging.getLogger().removeHandler(errors)
        await runner.cleanup()


async def _exchange(port: int, payload: bytes, timeout: float = 1.5) -> list[tuple[int, dict, bytes]]:
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
    return _responses(data)


def _responses(data: bytes) -> list[tuple[int, dict, bytes]]:
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


def _judge(responses: list[tuple[int, dict, bytes]]) -> str | None:
    """None if the answers are acceptable, else what is wrong."""
    for status, headers, body in responses:
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


async def _healthy(port: int) -> bool:
    responses = await _exchange(port, _get("/healthz"))
    return bool(responses) and responses[0][0] == 200


@pytest.mark.parametrize("case", list(HANDMADE))
async def test_handmade_hostile_request(server, case, tally):
    port, errors = server
    problem = _judge(await _exchange(port, HANDMADE[case]))
    healthy = await _healthy(port)
    logged = [r.getMessage() for r in errors.records]
    tally.cases()
    tally.fault(problem is None and healthy and not logged)
    assert problem is None, problem
    assert healthy and not logged, logged


async def test_random_bytes(server, tally):
    port, errors = server
    rng = random.Random(14)
    pieces = [b"GET ", b"POST ", b"/recommend?workload=postgres", b"/healthz", b" HTTP/1.1\r\n", b"Host: x\r\n",
              b"Content-Length: 3\r\n", b"Transfer-Encoding: chunked\r\n", b"\r\n", b"\x00", b"\xff", b"%00", b"?",
              b"&", b"=", b":", b" ", b"\t"]
    problems = []
    for i in range(RANDOM_CASES):
        payload = b"".join(rng.choice(pieces) if rng.random() < 0.7 else bytes([rng.randrange(256)])
                           for _ in range(rng.randint(1, 40))) + b"\r\n\r\n"
        problem = _judge(await _exchange(port, payload, timeout=0.5))
        tally.cases()
        tally.fault(problem is None)
        if problem:
            problems.append((payload, problem))
    assert await _healthy(port)
    assert not problems, problems[:5]
    assert not errors.records, [r.getMessage() for r in errors.records][:5]
