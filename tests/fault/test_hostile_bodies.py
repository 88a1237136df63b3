"""Hostile request bodies over raw sockets against the real app, served as `zfs-advisor serve`
serves it (a replayed lab snapshot, 127.0.0.1, a token so that POST /v1/probes reads its body):

- JSON nested thousands deep: a 400 JSON error, not a 500 (json's RecursionError);
- clients that go away mid-body: no ERROR, no traceback, at most one INFO line a minute;
- token holders trickling their bodies a byte at a time, as many as there are work slots:
  the heavy endpoints still answer, and each trickler gets 408 once the body read times out
  (the body is read before the request takes a slot, advisor/server/body.py).
"""
from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import HOSTS
from support.rawhttp import exchange, get, judge, responses, serving
from support.waiting import await_until
from tests.fault.tally import FULL

SNAPSHOT = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"
TOKEN = "hostile-bodies-token"
DROPS = 100 if FULL else 20


def post(body: bytes, length: int | None = None, chunked: bool = False) -> bytes:
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body) if length is None else length}"
    return (f"POST /v1/probes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\n{framing}\r\nConnection: close\r\n\r\n").encode() + body


@pytest.fixture
async def server(tmp_path):
    settings = Settings(root=str(SNAPSHOT), api_token=TOKEN, state_dir=str(tmp_path / "state"), model=False)
    async with serving(create_app(settings)) as served:
        yield served.port, served.errors


async def _healthy(port: int) -> bool:
    answers = await exchange(port, get("/healthz"))
    return bool(answers) and answers[0][0] == 200


@pytest.mark.parametrize("body", [b"[" * 5000 + b"]" * 5000, b'{"pool": ' * 1500 + b"1" + b"}" * 1500,
                                  b'{"params": {"recordsize": ' + b"[" * 3000 + b"]" * 3000 + b"}}"])
async def test_deeply_nested_json_is_a_400(server, body, tally):
    port, errors = server
    answers = await exchange(port, post(body))
    problem = judge(answers) or (None if answers and answers[0][0] == 400 else f"answers {answers}")
    tally.cases()
    tally.fault(problem is None and not errors.records)
    assert problem is None, problem
    assert "nested too deeply" in json.loads(answers[0][2])["error"]["reason"]
    assert not errors.records and await _healthy(port)


async def _drop_mid_body(port: int, payload: bytes) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(payload)
    await writer.drain()
    await asyncio.sleep(0.05)  # the behaviour under test: the client goes while the server reads the body
    writer.close()
    await writer.wait_closed()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_clients_that_drop_mid_body_log_one_line(server, chunked, caplog, tally):
    port, errors = server
    half = b"5\r\n" + b'{"poo' + b"\r\n" if chunked else b'{"pool": "ta'
    with caplog.at_level(logging.INFO, logger="advisor"):
        for _ in range(DROPS):
            await _drop_mid_body(port, post(half, length=200, chunked=chunked))
        await asyncio.sleep(0.2)  # what the server logs about the drops meanwhile is what is counted
        healthy = await _healthy(port)
    lines = [r for r in caplog.records if r.name.startswith("advisor") and r.levelno >= logging.INFO]
    quiet = not errors.records and len(lines) <= 1 and not any(r.exc_info for r in lines)
    tally.cases(DROPS)
    for _ in range(DROPS):
        tally.fault(quiet and healthy)
    assert healthy
    assert not errors.records, [r.getMessage() for r in errors.records][:3]
    assert len(lines) <= 1 and not any(r.exc_info for r in lines), [r.getMessage() for r in lines]
    assert all(r.levelno <= logging.INFO for r in lines)


async def test_bodies_trickled_by_token_holders_hold_no_work_slot(server, monkeypatch, tally):
    """As many tricklers as work slots (4), a byte every 0.2 s: /v1/pools and /recommend answer
    while they trickle, and each trickler gets 408 once its body is late."""
    port, errors = server
    monkeypatch.setattr("advisor.server.body.BODY_READ_TIMEOUT_SECONDS", 2.0)
    body = json.dumps({"pool": "tank", "workload": "postgres"}).encode()

    async def trickle() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answer = asyncio.create_task(reader.read())  # read as it comes: the server closes after its 408
        try:
            writer.write(post(b"", length=len(body)))
            for i, byte in enumerate(body):
                if answer.done():
                    break  # answered (408): the rest of the body is not wanted
                writer.write(bytes([byte]))
                await writer.drain()
                if i == 0:
                    sending.append(writer)
                await asyncio.sleep(0.2)  # the behaviour under test: a byte every 0.2 s
        except (ConnectionResetError, BrokenPipeError):
            pass  # the server answered 408 and closed: what came is in `answer`
        try:
            async with asyncio.timeout(15):
                return await answer
        finally:
            writer.close()

    sending: list[asyncio.StreamWriter] = []
    tricklers = [asyncio.create_task(trickle()) for _ in range(4)]
    await await_until(lambda: len(sending) == 4, 10, "all four sending their bodies")
    timings = []
    for target in ("/v1/pools", "/recommend?workload=postgres", "/metrics"):
        started = time.monotonic()
        answers = await exchange(port, get(target, f"Authorization: Bearer {TOKEN}\r\n"), timeout=5)
        timings.append((target, answers[0][0] if answers else None, time.monotonic() - started))
    late = [responses(data) for data in await asyncio.gather(*tricklers)]
    ok_heavy = all(status == 200 and took < 5 for _, status, took in timings)
    ok_late = all(a and a[0][0] == 408 and judge(a) is None for a in late)
    tally.cases(4)
    for a in late:
        tally.fault(ok_heavy and bool(a) and a[0][0] == 408)
    assert ok_heavy, timings
    assert ok_late, late
    assert not errors.records and await _healthy(port)
