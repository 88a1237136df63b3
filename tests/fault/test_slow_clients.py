"""Slow and idle clients over real sockets: a request that never finishes arriving is dropped,
and 1,100 of them at the default 1,024 file descriptors neither lock /healthz out nor flood
the log (connections are counted at accept() and capped below the limit, the oldest idle one
closed first, advisor/server/connections.py; asyncio's errors are rate-limited).

The file-descriptor case runs `zfs-advisor serve` as the CLI does, in a process whose
RLIMIT_NOFILE is 1,024, replaying a lab snapshot on 127.0.0.1.
"""
from __future__ import annotations

import asyncio
import http.client
import logging
import socket
import time

import pytest

from advisor.config.settings import Settings
from advisor.process.logs import RateLimitedLog
from advisor.service.app import create_app
from support import HOSTS
from support.rawhttp import serving
from support.service import Service
from support.waiting import apoll, poll

SNAPSHOT = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"
HALF = b"GET /healthz HTTP/1.1\r\nHost:"


def _healthz(port: int, timeout: float = 10.0) -> tuple[int, float]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status, time.perf_counter() - started
    finally:
        conn.close()


def _answers_200(port: int) -> bool:
    try:
        return _healthz(port)[0] == 200
    except OSError:  # reset or refused: not yet
        return False


@pytest.fixture
def service_at_1024_fds(tmp_path):
    env = {"ZFS_ADVISOR_STATE_DIR": str(tmp_path / "state"), "ZFS_ADVISOR_LOG_FORMAT": "text",
           "ZFS_ADVISOR_LOG_LEVEL": "info"}
    with Service(SNAPSHOT, tmp_path, nofile=1024, env=env) as service:
        yield service.port, service.log


def test_1100_half_sent_requests_at_1024_fds(service_at_1024_fds, tally):
    port, log = service_at_1024_fds
    held: list[socket.socket] = []
    refused = 0
    try:
        for _ in range(1100):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(HALF)
                held.append(s)
            except OSError:
                refused += 1  # refused or reset: quick, which is what a cap should do
        answers = [_healthz(port) for _ in range(5)]
    finally:
        for s in held:
            s.close()
    # the clients gone, /healthz answers again (polled: the service may still be closing theirs)
    recovered = poll(lambda: _answers_200(port), 10)
    lines = log.read_text().splitlines()
    ok = all(status == 200 for status, _ in answers) and recovered and len(lines) < 20
    tally.cases()
    tally.fault(ok)
    assert all(status == 200 for status, _ in answers), answers
    print(f"/healthz with 1,100 half-sent requests open: worst {max(t for _, t in answers) * 1000:.0f} ms; "
          f"{refused} connects refused; {len(lines)} log lines")
    assert recovered, "/healthz did not answer 200 within 10 s of the clients leaving"
    assert len(lines) < 20, lines[:20]  # rate-limited: not a line per refused accept()


async def test_half_sent_request_is_dropped_after_the_read_timeout(tally):
    async with serving(create_app(Settings(root=str(SNAPSHOT))), read_timeout=0.5) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(HALF)
        await writer.drain()
        started = time.monotonic()
        async with asyncio.timeout(10):
            closed = await reader.read() == b""
        waited = time.monotonic() - started
        writer.close()
        tally.cases()
        tally.fault(closed and waited < 5)
        assert closed and 0.3 < waited < 5, waited


async def _open_half_sent(port: int, n: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    held = []
    for _ in range(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(HALF)
            await writer.drain()
        except ConnectionResetError:
            pass  # refused at the limit
        held.append((reader, writer))
    return held


async def test_connection_cap_closes_the_oldest_idle_connection(tally):
    """Beyond the limit, the oldest idle connection (at least 0.1 s old) closes for a new one;
    younger ones are not closed for the newcomers of a burst (those wait in the kernel's queue
    until one is old enough); the count of open sockets goes back to zero once the clients are gone."""
    async with serving(create_app(Settings(root=str(SNAPSHOT))), max_connections=8) as served:
        guard = served.runner.guard
        idle = await _open_half_sent(served.port, 20)
        await apoll(lambda: guard.open >= 8, 5)  # the burst accepted up to the limit (and not past it: below)
        in_burst = guard.open
        await asyncio.sleep(0.2)  # the first eight are older than MIN_IDLE_AGE_SECONDS now
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(5):
            answer = await reader.read()
        oldest_closed = await asyncio.wait_for(idle[0][0].read(), 2) == b""
        writer.close()
        for _, w in idle:
            w.close()
        closed = await apoll(lambda: guard.open == 0, 5)
        ok = answer.startswith(b"HTTP/1.1 200") and in_burst == 8 and oldest_closed and closed
        tally.cases()
        tally.fault(ok)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert in_burst == 8 and oldest_closed
        assert guard.open == 0  # every socket left the count when it closed


async def test_a_request_queued_behind_a_burst_is_answered_not_refused(tally):
    """The whole burst and a health check behind it wait in the kernel's queue before the server
    gets a turn (a loaded machine): the loop accepts the burst up to the limit in one go, and the
    health check comes next, while none of those connections has reached the server yet. It is
    not refused for want of an idle connection (they are on their way); it waits, then takes the
    place of the oldest idle one."""
    limit = 8
    async with serving(create_app(Settings(root=str(SNAPSHOT))), max_connections=limit) as served:
        held = []
        for _ in range(limit):  # blocking sockets: the loop gets no turn until the health check is queued too
            s = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            s.sendall(HALF)
            held.append(s)
        check = socket.create_connection(("127.0.0.1", served.port), timeout=5)
        check.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        check.setblocking(False)
        answer = b""
        try:
            async with asyncio.timeout(5):
                loop = asyncio.get_running_loop()
                while chunk := await loop.sock_recv(check, 65536):
                    answer += chunk
        except (ConnectionResetError, TimeoutError) as e:
            answer = repr(e).encode()
        finally:
            check.close()
            for s in held:
                s.close()
        tally.cases()
        tally.fault(answer.startswith(b"HTTP/1.1 200"))
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert served.runner.guard.refused == 0


def test_rate_limited_log_writes_one_line_per_reason_and_counts_the_rest(caplog):
    limited = RateLimitedLog(logging.getLogger("test.ratelimit"), interval=0.2)
    with caplog.at_level(logging.WARNING, logger="test.ratelimit"):
        for _ in range(100):
            limited.log(logging.WARNING, "a", "reason a")
            limited.log(logging.WARNING, "b", "reason b")
        time.sleep(0.25)  # the behaviour under test: past the 0.2 s interval
        limited.log(logging.WARNING, "a", "reason a")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:2] == ["reason a", "reason b"]
    assert len(messages) == 3 and messages[2].startswith("reason a (99 more like this")
