"""Clients that hold a connection without finishing what they started, over real sockets: a
reader that never reads its response, a body that never arrives, a TLS handshake left half done.
Each is dropped after its deadline, and at the connection limit each is closed for a new client,
so a legitimate client's /healthz is answered (advisor/server/errors.py, connections.py).

The served host is a recorded lab snapshot scaled to 1,000 datasets (tests/bench/scale_snapshot.py):
its 1.8 MB /metrics body is more than the kernel's send buffer (SEND_BUFFER) takes, as on a real
host with that many datasets. `test_hostile_clients_against_healthz` runs `zfs-advisor serve` as a
process with a small file limit and sweeps the kinds of tests/bench/hostile.py at a tenth of its
sizes; the benchmark prints the full table (docs/reliability.md).
"""
from __future__ import annotations

import asyncio
import socket
import ssl
import sys
import time

import pytest

from advisor.config.settings import Settings
from advisor.server import errors
from advisor.server.connections import ARRIVAL_SECONDS
from advisor.service.app import create_app
from support import HOSTS, REPO
from support.hostile import (
    ATTACKS,
    HALF_CLIENT_HELLO,
    SLOW_READER,
    HealthPoller,
    RssSampler,
    hold,
    open_files,
    slow_body,
)
from support.rawhttp import get, responses, serving
from support.service import Service
from support.tls import make_certs
from support.waiting import apoll, poll

sys.path.insert(0, str(REPO / "tests" / "bench"))
import scale_snapshot  # noqa: E402 - after the sys.path line above

SNAPSHOT = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"
TOKEN = "hostile-clients-token-0123456789"
MEMORY_MAX_MB = 768  # deploy/systemd/zfs-advisor.service


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    return scale_snapshot.scale(SNAPSHOT, tmp_path_factory.mktemp("scaled") / "host", 1000)


def app(root, **settings):
    return create_app(Settings(root=str(root), model=False, **settings))


async def connect(port: int, payload: bytes, receive_buffer: int = 4096) -> socket.socket:
    """A non-blocking socket that sent `payload` and will read nothing."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    await loop.sock_sendall(sock, payload)
    return sock


async def healthz(port: int, tls: ssl.SSLContext | None = None) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
    try:
        writer.write(get("/healthz"))
        async with asyncio.timeout(10):
            answers = responses(await reader.read())
        return answers[0][0] if answers else 0
    finally:
        writer.close()


async def test_a_reader_that_reads_nothing_is_dropped_after_the_write_timeout(scaled, monkeypatch, tally):
    monkeypatch.setattr(errors, "WRITE_TIMEOUT_SECONDS", 0.5)
    async with serving(app(scaled)) as served:
        server, guard = served.runner.server, served.runner.guard
        sock = await connect(served.port, SLOW_READER)
        held_up = await apoll(lambda: len(server._held_up) == 1, 10)
        dropped = await apoll(lambda: guard.open == 0, 5)
        sock.close()
    tally.cases()
    tally.fault(held_up and dropped)
    assert held_up, "the response never backed up into the server: the test proves nothing"
    assert dropped, f"{guard.open} connection(s) still open 5 s after the write timeout"


@pytest.mark.parametrize("waits_on", ["a response not read", "a body not sent"])
async def test_at_the_limit_a_request_waiting_on_its_client_is_closed_for_a_new_client(waits_on, scaled, tally):
    """Eight connections, the cap, each with a request the client holds up: /healthz gets one."""
    reader = waits_on == "a response not read"
    served_app = app(scaled) if reader else app(SNAPSHOT, api_token=TOKEN)
    async with serving(served_app, max_connections=8) as served:
        server = served.runner.server
        held = [await connect(served.port, SLOW_READER if reader else slow_body(TOKEN)) for _ in range(8)]
        waiting = await apoll(lambda: len(server._held_up) == 8, 10)
        status = await healthz(served.port)
        for sock in held:
            sock.close()
    tally.cases()
    tally.fault(waiting and status == 200)
    assert waiting, f"{len(server._held_up)} of 8 requests waiting on their client"
    assert status == 200


@pytest.mark.parametrize("token", [None, TOKEN], ids=["no token configured", "token configured"])
async def test_a_request_that_starts_work_is_refused_before_its_body(token, tally):
    """Without the token, POST /v1/probes is answered at once, not after its body's 10 s."""
    async with serving(app(SNAPSHOT, api_token=token)) as served:
        started = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(slow_body(None))
        async with asyncio.timeout(5):
            head = await reader.readuntil(b"\r\n\r\n")
        took = time.perf_counter() - started
        writer.close()
    status = int(head.split()[1])
    tally.cases()
    tally.fault(status == (403 if token is None else 401) and took < 2)
    assert status == (403 if token is None else 401), head
    assert took < 2, f"answered after {took:.1f} s"


async def test_a_body_in_a_content_encoding_is_refused_unread(tally):
    async with serving(app(SNAPSHOT, api_token=TOKEN)) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(f"POST /v1/probes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n"
                     f"Content-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\n".encode()
                     + b"\x1f\x8bgarbage")
        async with asyncio.timeout(5):
            answers = responses(await reader.read())
        writer.close()
    tally.cases()
    tally.fault(bool(answers) and answers[0][0] == 415)
    status, _, body = answers[0]
    assert status == 415 and b'"valid": ["identity"]' in body, body


async def test_at_the_limit_a_half_done_tls_handshake_is_closed_for_a_new_client(tmp_path, tally):
    certs = make_certs(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(certs.server_cert, certs.server_key)
    client_tls = ssl.create_default_context(cafile=str(certs.ca))
    async with serving(app(SNAPSHOT), ssl_context=server_tls, max_connections=8) as served:
        held = [await connect(served.port, HALF_CLIENT_HELLO) for _ in range(8)]
        await asyncio.sleep(ARRIVAL_SECONDS + 0.2)  # younger handshakes are waited for, not closed
        status = await healthz(served.port, client_tls)
        for sock in held:
            sock.close()
    tally.cases()
    tally.fault(status == 200)
    assert status == 200


@pytest.mark.parametrize("kind", sorted(ATTACKS))
def test_hostile_clients_against_healthz(kind, scaled, tmp_path, tally):
    """The service as a process at 512 file descriptors (a cap of 320 connections): 400 hostile
    clients of `kind` held for 14 s, past every deadline, while /healthz is polled; every poll
    answered, memory within the unit's MemoryMax, and the connections closed by their deadlines."""
    attack = ATTACKS[kind]
    args, tls = [], None
    if attack.tls:
        certs = make_certs(tmp_path)
        (tmp_path / "web.yml").write_text(f"tls_server_config:\n  cert_file: {certs.server_cert}\n"
                                          f"  key_file: {certs.server_key}\n")
        args, tls = ["--web.config.file", str(tmp_path / "web.yml")], ssl.create_default_context(cafile=str(certs.ca))
    env = {"ZFS_ADVISOR_LOG_LEVEL": "warning", "ZFS_ADVISOR_API_TOKEN": TOKEN,
           "ZFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
    with Service(scaled, tmp_path, *args, env=env, nofile=512) as service:
        files_before = open_files(service.proc.pid)
        with HealthPoller(service.port, tls=tls, interval=0.1) as poller, RssSampler(service.proc.pid) as rss:
            held = hold(service.port, 400, attack.payload(TOKEN), until_answered=attack.until_answered)
            time.sleep(14)  # the attack's length: its connections held while the poller checks /healthz
        # every hostile connection closed by its deadline (10 s, and 2 s of lingering for a body)
        # once the last of them has had it: opening 400 takes seconds on a loaded machine
        poll(lambda: open_files(service.proc.pid) - files_before <= 8, 20, interval=0.2)
        left_open = open_files(service.proc.pid) - files_before
        for sock in held:
            sock.close()
    answered = poller.answered_share()
    ok = answered >= 0.99 and rss.peak_mb < MEMORY_MAX_MB and left_open <= 8
    tally.cases()
    tally.fault(ok)
    print(f"{kind}: {len(held)} held; /healthz {answered:.1%} of {poller.polls} answered, p99 "
          f"{poller.quantile(0.99) * 1000:.0f} ms; RSS peak {rss.peak_mb:.0f} MB; {left_open} left open")
    assert answered >= 0.99, (answered, sorted(set(poller.failures)))
    assert rss.peak_mb < MEMORY_MAX_MB
    assert left_open <= 8, f"{left_open} descriptors more than before the attack"


async def test_requests_waiting_on_their_clients_are_bounded(scaled, monkeypatch, tally):
    """Beyond MAX_HELD_UP readers that do not read, the one waiting longest is dropped: memory
    is bounded by that count, not by the file limit."""
    monkeypatch.setattr(errors, "MAX_HELD_UP", 3)
    async with serving(app(scaled)) as served:
        server, guard = served.runner.server, served.runner.guard
        held = []
        for _ in range(5):
            held.append(await connect(served.port, SLOW_READER))
            await apoll(lambda: len(server._held_up) == min(len(held), 3), 10)
        bounded = await apoll(lambda: guard.open == 3, 10)
        for sock in held:
            sock.close()
    tally.cases()
    tally.fault(bounded)
    assert bounded, f"{guard.open} connections open, {len(server._held_up)} waiting on their client"
