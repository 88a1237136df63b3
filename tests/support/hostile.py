"""Hostile clients over real sockets, for the fault suite (tests/fault/test_hostile_clients.py) and
its benchmark (tests/bench/hostile.py): connections that hold a slot of the service's and cost it
memory, held open while a legitimate client polls /healthz and the service's resident memory is
sampled from /proc.

    with HealthPoller(port) as poller, RssSampler(pid) as rss:
        held = ATTACKS["slow readers"](port, 2000)
        ...
    poller.answered_share(), poller.quantile(0.99), rss.peak_mb
"""
from __future__ import annotations

import http.client
import os
import socket
import ssl
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

# what each kind of client sends, and then it sends nothing more and reads nothing
SLOW_READER = (b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: identity\r\n"
               b"Accept: text/plain\r\n\r\n")


def slow_body(token: str | None) -> bytes:
    """A POST /v1/probes whose 1,000-byte body never comes (its first byte only)."""
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"POST /v1/probes HTTP/1.1\r\nHost: localhost\r\n{auth}Content-Type: application/json\r\n"
            f"Content-Length: 1000\r\n\r\n{{").encode()


# The first bytes of a TLS ClientHello record (handshake, TLS 1.0 record version, a length):
# a handshake the server waits to see the rest of.
HALF_CLIENT_HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"


def hold(port: int, count: int, payload: bytes, receive_buffer: int | None = 4096,
         until_answered: bool = False) -> list[socket.socket]:
    """`count` connections to 127.0.0.1:`port`, each sending `payload` and then nothing; a
    small receive buffer (as a client that means harm sets) makes a response back up into the
    server sooner. With `until_answered`, each waits (5 s at most) for the first bytes of its
    answer before the next one connects, and a connection whose answer is not a 200 is closed
    (a reader that stops after the status line: the service's busy 503s do not count as held).
    A refused or reset connect is counted out, not retried."""
    held = []
    for _ in range(count):
        sock = socket.socket()
        if receive_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(payload)
            if until_answered and not _answered_200(sock):
                sock.close()
                continue
        except OSError:
            sock.close()
            continue
        held.append(sock)
    return held


def _answered_200(sock: socket.socket) -> bool:
    status = b""
    deadline = time.monotonic() + 5
    while len(status) < 12 and time.monotonic() < deadline:
        status = sock.recv(12, socket.MSG_PEEK)  # peeked: the bytes stay unread
        if not status:
            return False
        if len(status) < 12:
            time.sleep(0.001)
    return status.startswith(b"HTTP/1.1 200")


def open_files(pid: int) -> int:
    """The file descriptors process `pid` has open (its connections among them)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


class _InThread:
    """`with` runs `_run` in a daemon thread until the block ends (`_stop` is set then)."""

    def __enter__(self: _Self) -> _Self:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        raise NotImplementedError


_Self = TypeVar("_Self", bound=_InThread)


@dataclass
class HealthPoller(_InThread):
    """GET /healthz on a new connection every `interval` s, in a thread, until closed."""

    port: int
    tls: ssl.SSLContext | None = None
    interval: float = 0.05
    timeout: float = 5.0
    times: list[float] = field(default_factory=list)  # seconds of each answered poll
    failures: list[str] = field(default_factory=list)

    def _once(self) -> None:
        started = time.perf_counter()
        conn = (http.client.HTTPSConnection("127.0.0.1", self.port, timeout=self.timeout, context=self.tls)
                if self.tls else http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout))
        try:
            conn.request("GET", "/healthz", headers={"Host": "localhost"})
            status = conn.getresponse().status
        except (OSError, http.client.HTTPException) as exc:
            self.failures.append(type(exc).__name__)
            return
        finally:
            conn.close()
        if status == 200:
            self.times.append(time.perf_counter() - started)
        else:
            self.failures.append(f"HTTP {status}")

    def _run(self) -> None:
        while not self._stop.is_set():
            self._once()
            self._stop.wait(self.interval)

    @property
    def polls(self) -> int:
        return len(self.times) + len(self.failures)

    def answered_share(self) -> float:
        return len(self.times) / self.polls if self.polls else 0.0

    def quantile(self, q: float) -> float:
        """The q-quantile of the answered polls' seconds (a failed poll counts as `timeout`)."""
        values = sorted(self.times + [self.timeout] * len(self.failures))
        if len(values) < 2:
            return values[0] if values else 0.0
        return statistics.quantiles(values, n=100, method="inclusive")[min(98, max(0, round(q * 100) - 1))]


@dataclass
class RssSampler(_InThread):
    """The resident memory of process `pid`, sampled every `interval` s in a thread."""

    pid: int
    interval: float = 0.1
    samples: list[int] = field(default_factory=list)  # kB

    def rss_kb(self) -> int:
        with open(f"/proc/{self.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(self.rss_kb())
            except (OSError, StopIteration):
                return
            self._stop.wait(self.interval)

    @property
    def peak_mb(self) -> float:
        return max(self.samples, default=0) / 1024


@dataclass(frozen=True)
class Attack:
    name: str
    payload: Callable[[str | None], bytes]  # from the service's api_token
    tls: bool = False  # against a service that speaks TLS
    until_answered: bool = False  # each waits for its answer to begin (hold())


ATTACKS = {
    "slow readers": Attack("slow readers", lambda token: SLOW_READER, until_answered=True),
    "slow bodies, token": Attack("slow bodies, token", slow_body),
    "slow bodies, no token": Attack("slow bodies, no token", lambda token: slow_body(None)),
    "half TLS handshakes": Attack("half TLS handshakes", lambda token: HALF_CLIENT_HELLO, tls=True),
}
