"""Slow and idle clients over real sockets: a request that never finishes arriving is dropped,
and 1,100 of them at the default 1,024 file descriptors neither lock /healthz out nor flood
the log (the connection cap closes the oldest idle connection; asyncio's errors are
rate-limited).

The file-descriptor case runs `zfs-advisor serve` as the CLI does, in a process whose
RLIMIT_NOFILE is 1,024, replaying a lab snapshot on 127.0.0.1.
"""
from __future__ import annotations

import asyncio
import http.client
import logging
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web

from advisor.api.errors import JsonErrorAppRunner
from advisor.app import create_app
from advisor.logs import RateLimitedLog
from advisor.settings import Settings
from support import HOSTS, REPO

SNAPSHOT = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"
HALF = b"GET /healthz HTTP/1.1\r\nHost:"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthz(port: int, timeout: float = 10.0) -> tuple[int, float]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status, time.perf_counter() - started
    finally:
        conn.close()


@pytest.fixture
def service_at_1024_fds(tmp_path):
    port = _free_port()
    log = tmp_path / "stderr"
    env = {**os.environ, "PYTHONPATH": str(REPO), "ZFS_ADVISOR_STATE_DIR": str(tmp_path / "state"),
           "ZFS_ADVISOR_LOG_FORMAT": "text"}
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "advisor", "serve", "--root", str(SNAPSHOT), "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024)))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _healthz(port, 2)[0] == 200:
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"service did not start: {log.read_text()[-2000:]}")
                time.sleep(0.2)
        yield port, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


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
    time.sleep(0.5)
    after = _healthz(port)
    lines = log.read_text().splitlines()
    ok = all(status == 200 for status, _ in answers) and after[0] == 200 and len(lines) < 20
    tally.cases()
    tally.fault(ok)
    assert all(status == 200 for status, _ in answers), answers
    print(f"/healthz with 1,100 half-sent requests open: worst {max(t for _, t in answers) * 1000:.0f} ms; "
          f"{refused} connects refused; {len(lines)} log lines")
    assert after[0] == 200
    assert len(lines) < 20, lines[:20]  # rate-limited: not a line per refused accept()


async def test_half_sent_request_is_dropped_after_the_read_timeout(tally):
    runner = JsonErrorAppRunner(create_app(Settings(root=str(SNAPSHOT))), handle_signals=False, read_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
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
    finally:
        await runner.cleanup()


async def test_connection_cap_closes_the_oldest_idle_connection(tally):
    runner = JsonErrorAppRunner(create_app(Settings(root=str(SNAPSHOT))), handle_signals=False, max_connections=8)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        idle = []
        for _ in range(20):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(HALF)
            await writer.drain()
            idle.append((reader, writer))
        await asyncio.sleep(0.2)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(5):
            answer = await reader.read()
        open_now = len(runner.server.connections)
        oldest_closed = await asyncio.wait_for(idle[0][0].read(), 2) == b""
        writer.close()
        for _, w in idle:
            w.close()
            await w.wait_closed()
        await writer.wait_closed()
        ok = answer.startswith(b"HTTP/1.1 200") and open_now <= 9 and oldest_closed
        tally.cases()
        tally.fault(ok)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert open_now <= 9 and oldest_closed, open_now
    finally:
        await runner.cleanup()


def test_rate_limited_log_writes_one_line_per_reason_and_counts_the_rest(caplog):
    limited = RateLimitedLog(logging.getLogger("test.ratelimit"), interval=0.2)
    with caplog.at_level(logging.WARNING, logger="test.ratelimit"):
        for _ in range(100):
            limited.log(logging.WARNING, "a", "reason a")
            limited.log(logging.WARNING, "b", "reason b")
        time.sleep(0.25)
        limited.log(logging.WARNING, "a", "reason a")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:2] == ["reason a", "reason b"]
    assert len(messages) == 3 and messages[2].startswith("reason a (99 more like this")
