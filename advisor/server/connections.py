"""Client connections kept below the process's file-descriptor limit, counted where they begin.

asyncio accepts up to `backlog` connections per turn of the event loop, and a connection reaches
the server (where a cap could close it) only a turn or two later: capped there, a burst of 1,500
connections at 1,024 descriptors still ran out (`accept()` failed with EMFILE, asyncio stopped
accepting for a second at a time, and /healthz waited 9 s). So the count is kept at accept():

* each accepted socket counts from accept() until it is closed (`_CountedSocket`), whether it is
  serving, idle, in a TLS handshake or being closed;
* at `limit` (the soft RLIMIT_NOFILE, read at start, less FD_RESERVE), a new connection makes
  the oldest connection that is not serving a request (idle, or a request still arriving) close
  and takes its place; while SLACK of those are still closing (their descriptors are freed in
  the loop's next turn), nothing more is accepted and new connections wait in the kernel's
  queue;
* while the oldest such connection is younger than MIN_IDLE_AGE_SECONDS (a burst the loop
  accepted in one go), new connections wait in the kernel's queue too: refused, a health check
  sent right after a burst of 1,100 half-sent requests got a reset on a loaded 2-core machine;
  closing the young ones instead would close each before it could send its request;
* connections accepted in the last ARRIVAL_SECONDS that have not reached the server yet (the
  loop makes them a turn or two after accept()) will be idle ones: while there are such, a new
  connection waits in the kernel's queue as well. Refused instead, a health check queued right
  behind a burst that the loop accepted in one go got a reset (CI, a loaded 2-core machine);
* when none can be closed (every connection is serving a request), the new connection is
  closed at once, right after accept(): it costs the client a reset and the service nothing;
* refusals are logged at most once a minute, with the count of the others.
"""
from __future__ import annotations

import asyncio
import logging
import resource
import socket
import time
from enum import Enum
from typing import Any, Protocol

from aiohttp import web

from advisor.logs import RateLimitedLog

log = logging.getLogger(__name__)
_refusals = RateLimitedLog(log, interval=60.0)

# Descriptors kept for everything but client connections (the listening sockets, the zpool/zfs
# pipes, kstat files read in worker threads, SQLite, the journal) and for SLACK.
FD_RESERVE = 192
# Connections let in beyond the limit while as many older ones close (a turn of the loop).
SLACK = 64
# The kernel's queue of connections not accepted yet (capped by net.core.somaxconn): at aiohttp's
# 128, a burst overflowed it and the kernel dropped the SYN of a health check, which the client
# sent again only a second later.
BACKLOG = 1024
# Refused connections closed per wake-up of the listening socket before the loop gets a turn.
REFUSE_PER_WAKE = 256
# At the limit, an idle connection younger than this is not closed for a new one.
MIN_IDLE_AGE_SECONDS = 0.1
# Accepted connections count as on their way to the server (as idle ones to come) this long: a
# TLS handshake that never ends is not waited for beyond it.
ARRIVAL_SECONDS = 1.0


def default_max_connections() -> int:
    """Client connections kept open at most, from the soft file-descriptor limit (1,024 -> 832)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(32, soft - FD_RESERVE) if soft != resource.RLIM_INFINITY else 4096


class IdleConnections(Protocol):
    """The server's connections that are not serving a request (idle, or a request still arriving)."""

    def oldest_idle_since(self) -> float | None:
        """time.monotonic() when the oldest of them was made; None when there is none."""

    def close_oldest_idle(self) -> None:
        """Close the oldest of them at once."""

    def made(self) -> int:
        """How many connections have reached the server and not left it (any state)."""


class _NoneIdle:
    def oldest_idle_since(self) -> float | None:
        return None

    def made(self) -> int:
        return 0

    def close_oldest_idle(self) -> None:
        pass


class Verdict(Enum):
    ADMIT = "admit"        # below the limit
    REPLACE = "replace"    # at the limit: the oldest idle connection closes for the new one
    WAIT = "wait"          # at the limit, the idle ones too young or on their way: leave it in the kernel's queue
    REFUSE = "refuse"      # at the limit, none idle: accept() and close it


class ConnectionGuard:
    """The count of accepted sockets still open, and who gets in at the limit (`idle` is the
    server's view of its connections, set once the server exists)."""

    def __init__(self, limit: int, idle: IdleConnections | None = None) -> None:
        self.limit = limit
        self.idle: IdleConnections = idle or _NoneIdle()
        self.open = 0
        self.refused = 0
        self.last_accepted = float("-inf")  # time.monotonic() of the last accept()

    @property
    def closing(self) -> bool:
        """True while SLACK connections beyond the limit wait for older ones to finish closing."""
        return self.open >= self.limit + SLACK

    def verdict(self) -> Verdict:
        """What happens to the next connection; it changes nothing (no connection may be waiting)."""
        if self.open < self.limit:
            return Verdict.ADMIT
        since = self.idle.oldest_idle_since()
        if since is None:
            return Verdict.WAIT if self._arriving() else Verdict.REFUSE
        return Verdict.REPLACE if time.monotonic() - since >= MIN_IDLE_AGE_SECONDS else Verdict.WAIT

    def _arriving(self) -> bool:
        """Connections accepted lately have not reached the server yet: idle ones to come."""
        return self.open > self.idle.made() and time.monotonic() - self.last_accepted < ARRIVAL_SECONDS

    def replace(self) -> None:
        self.idle.close_oldest_idle()
        _refusals.log(logging.WARNING, "closed idle", "%d client connections open, the limit is %d: closed "
                      "the oldest one not serving a request", self.open, self.limit)

    def refuse(self) -> None:
        self.refused += 1
        _refusals.log(logging.WARNING, "refused", "%d client connections open, the limit is %d (the soft file "
                      "descriptor limit less %d), none idle: refused a new one", self.open, self.limit, FD_RESERVE)

    def listen(self, sock: socket.socket) -> None:
        """Make the listening socket `sock` count what it accepts (asyncio calls its accept())."""
        sock.__class__ = type("GuardedListener", (_GuardedListener,), {"__slots__": (), "guard": self})


class _CountedSocket(socket.socket):
    """An accepted socket that leaves the guard's count once, when it is closed (or collected)."""

    __slots__ = ("_guard",)
    _guard: ConnectionGuard | None

    def _real_close(self) -> None:
        self._uncount()
        super()._real_close()  # type: ignore[misc]  # socket.socket's private close (Lib/socket.py), not in typeshed

    def detach(self) -> int:
        self._uncount()
        return super().detach()

    def __del__(self) -> None:  # collected unclosed: the base's finalizer closes the descriptor
        self._uncount()
        super().__del__()  # type: ignore[misc]  # _socket.socket's finalizer (tp_finalize), not in typeshed

    def _uncount(self) -> None:
        guard = getattr(self, "_guard", None)
        if guard is not None:
            self._guard = None
            guard.open -= 1


class _GuardedListener(socket.socket):
    __slots__ = ()
    guard: ConnectionGuard

    def accept(self) -> tuple[socket.socket, object]:
        """The next connection the guard admits; the refused ones are closed as they come, up
        to REFUSE_PER_WAKE of them. BlockingIOError hands the loop back (asyncio calls again
        while the socket is readable): none waiting, too many refused in a row, older
        connections still closing (they close in the loop's next turn), or the idle ones too
        young to close; a burst waits in the kernel's queue meanwhile, it is not refused for it."""
        for _ in range(REFUSE_PER_WAKE):
            verdict = self.guard.verdict()
            if self.guard.closing or verdict is Verdict.WAIT:
                raise BlockingIOError
            # BlockingIOError when none is waiting: nothing closed for it. _accept: _socket.socket's
            # raw accept (the fd, not a socket object), not in typeshed
            fd, address = self._accept()  # type: ignore[attr-defined]
            if verdict is Verdict.REFUSE:
                self.guard.refuse()
                socket.close(fd)
                continue
            if verdict is Verdict.REPLACE:
                self.guard.replace()
            conn = _CountedSocket(self.family, self.type, self.proto, fileno=fd)
            conn._guard = self.guard
            self.guard.open += 1
            self.guard.last_accepted = time.monotonic()
            return conn, address
        raise BlockingIOError


class GuardedSite(web.TCPSite):
    """web.TCPSite whose listening sockets count what they accept through `runner.guard` (a
    JsonErrorAppRunner's), with a longer accept queue (BACKLOG); a TLS handshake gets
    `handshake_timeout` seconds, not asyncio's 60."""

    __slots__ = ("_handshake_timeout",)

    def __init__(self, runner: web.BaseRunner, host: str, port: int, *, handshake_timeout: float = 10.0,
                 backlog: int = BACKLOG, **kwargs: Any) -> None:
        super().__init__(runner, host, port, backlog=backlog, **kwargs)
        self._handshake_timeout = handshake_timeout

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site; TCPSite.start's create_server is replaced below
        # the runner is a JsonErrorAppRunner (advisor/server/errors.py, which imports this module)
        guard: ConnectionGuard = self._runner.guard  # type: ignore[attr-defined]
        if self._runner.server is None:
            raise RuntimeError("the runner is not set up")  # as web.TCPSite.start asserts
        server = await asyncio.get_running_loop().create_server(
            self._runner.server, self._host, self._port, ssl=self._ssl_context, backlog=self._backlog,
            reuse_address=self._reuse_address, reuse_port=self._reuse_port, start_serving=False,
            ssl_handshake_timeout=self._handshake_timeout if self._ssl_context else None)
        for sock in server.sockets:
            # asyncio hands out TransportSocket wrappers; accept() is the socket's (private, not in typeshed)
            guard.listen(sock._sock)  # type: ignore[attr-defined]
        await server.start_serving()
        self._server = server
        if "_bound_port" in web.TCPSite.__slots__:  # newer aiohttp answers `port` from it; older ones have none
            self._bound_port = server.sockets[0].getsockname()[1] if server.sockets else self._port
