"""Hostile requests over raw sockets against the real app, served as `zfs-advisor serve` serves it
(JsonErrorAppRunner, 127.0.0.1 only, a replayed lab snapshot): no 5xx, every error a JSON
document, no ERROR in the log, and the service still answers /healthz afterwards.

The loops are bounded (a fixed list of hand-made requests, then a fixed number of seeded
random byte strings; FAULT_SUITE=full runs more of them), and every connection has a deadline.
"""
from __future__ import annotations

import random

import pytest

from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import HOSTS
from support.rawhttp import exchange, get, judge, serving
from tests.fault.tally import FULL

SNAPSHOT = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"
RANDOM_CASES = 400 if FULL else 40


HANDMADE: dict[str, bytes] = {
    "request line 20 KB": get("/recommend?workload=" + "a" * 20000),
    "header value 20 KB": get("/healthz", "X-Long: " + "b" * 20000 + "\r\n"),
    "header name 10 KB": get("/healthz", "X" * 10000 + ": 1\r\n"),
    "200 headers": get("/healthz", "".join(f"X-{i}: {i}\r\n" for i in range(200))),
    "10,000 headers": get("/healthz", "".join(f"X-{i}: {i}\r\n" for i in range(10000))),
    "NUL and high bytes": b"\x00\xff\xfe GET / HTTP/1.1\r\n\r\n",
    "TLS client hello": bytes.fromhex("16030100a5010000a10303") + bytes(range(32)) + b"\x00" * 64,
    "bad method": b"G@T /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "HTTP/9.9": b"GET /healthz HTTP/9.9\r\nHost: localhost\r\n\r\n",
    "NUL in header name": b"GET /healthz HTTP/1.1\r\nHo\x00st: x\r\n\r\n",
    "CR without LF": b"GET /healthz HTTP/1.1\rHost: localhost\r\r\n",
    "space before colon": b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n",
    "smuggling CL+TE": b"POST /recommend HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "bad chunk size": b"POST /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "negative content length": b"POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: -5\r\n\r\n",
    "two content lengths": b"POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "body on GET, 1 MB declared": b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\nabc",
    "path traversal": get("/v1/facts/../../../../etc/passwd"),
    "encoded traversal": get("/v1/%2e%2e/%2e%2e/etc/passwd"),
    "NUL in path": get("/healthz%00"),
    "NUL in query": get("/recommend?workload=postgres&pool=tank%00"),
    "shell in pool": get("/recommend?workload=postgres&pool=tank;reboot"),
    "backticks in dataset": get("/recommend?workload=postgres&dataset=tank/%60id%60"),
    "newline in dataset": get("/recommend?workload=postgres&dataset=tank/pg%0A"),
    "dataset 256 chars": get("/recommend?workload=postgres&dataset=tank/" + "x" * 251),
    "repeated parameter": get("/recommend?workload=postgres&workload=backup"),
    "1,000 parameters": get("/recommend?" + "&".join(f"p{i}=1" for i in range(1000))),
    "unknown workload parameter": get("/recommend?workload=backup&page_size=8K"),
    "bad percent escapes": get("/recommend?workload=%zz%"),
    "unicode path": get("/\u202e\U0001f4a5".encode().decode("latin-1")),
    "absolute URI": b"GET http://evil.example/healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    "asterisk target": b"OPTIONS * HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    "DELETE": b"DELETE /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    "POST with body": b"POST /recommend HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    "no Host, HTTP/1.0": b"GET /healthz HTTP/1.0\r\n\r\n",
    "pipelined 50": b"".join(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n" for _ in range(49)) + get("/healthz"),
    "Accept text on error": get("/recommend?workload=nope", "Accept: text/html\r\n"),
    "only CRLFs": b"\r\n" * 1000,
    "half a request then close": b"GET /healthz HTTP/1.1\r\nHost:",
}


@pytest.fixture
async def server():
    async with serving(create_app(Settings(root=str(SNAPSHOT)))) as served:
        yield served.port, served.errors


async def _healthy(port: int) -> bool:
    responses = await exchange(port, get("/healthz"))
    return bool(responses) and responses[0][0] == 200


@pytest.mark.parametrize("case", list(HANDMADE))
async def test_handmade_hostile_request(server, case, tally):
    port, errors = server
    problem = judge(await exchange(port, HANDMADE[case]))
    healthy = await _healthy(port)
    logged = [r.getMessage() for r in errors.records]
    tally.cases()
    tally.fault(problem is None and healthy and not logged)
    assert problem is None, problem
    assert healthy and not logged, logged


async def test_random_bytes(server, tally):
    port, errors = server
    rng = random.Random(14)
    pieces = [b"GET ", b"POST ", b"/recommend?workload=postgres", b"/healthz", b" HTTP/1.1\r\n", b"Host: localhost\r\n",
              b"Content-Length: 3\r\n", b"Transfer-Encoding: chunked\r\n", b"\r\n", b"\x00", b"\xff", b"%00", b"?",
              b"&", b"=", b":", b" ", b"\t"]
    problems = []
    for _ in range(RANDOM_CASES):
        payload = b"".join(rng.choice(pieces) if rng.random() < 0.7 else bytes([rng.randrange(256)])
                           for _ in range(rng.randint(1, 40))) + b"\r\n\r\n"
        problem = judge(await exchange(port, payload, timeout=0.5))
        tally.cases()
        tally.fault(problem is None)
        if problem:
            problems.append((payload, problem))
    assert await _healthy(port)
    assert not problems, problems[:5]
    assert not errors.records, [r.getMessage() for r in errors.records][:5]
