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
* what the server can close for a new connection (the oldest first, advisor/server/errors.py):
  an idle connection, one whose request waits on its client (a response it does not read, a
  body it does not send), and one that has not reached the server ARRIVAL_SECONDS after
  accept() (a TLS handshake left half done: it is shut down, and asyncio closes it);
* when none can be closed (every connection is serving a request), the new connection is
  closed at once, right after accept(): it costs the client a reset and the service nothing;
* refusals are logged at most once a minute, with the count of the others.
"""
from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import logging
import resource
import socket
import time
import weakref
from enum import Enum
from typing import Any, Protocol

from aiohttp import web

from advisor.process.logs import RateLimitedLog

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
    """The server's connections it may close for a new one: not serving a request (idle, or a
    request's head still arriving), or serving one that waits on the client."""

    def oldest_idle_since(self) -> float | None:
        """time.monotonic() when the oldest of them began to hold its slot; None when there is none."""

    def close_oldest_idle(self) -> None:
        """Close the oldest of them at once."""


class _NoneIdle:
    def oldest_idle_since(self) -> float | None:
        return None

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
        # accepted sockets that have not reached the server (a TLS handshake under way), by
        # descriptor, oldest first: the socket (weakly: asyncio owns it) and when it was accepted
        self._unserved: dict[int, tuple[weakref.ref[socket.socket], float]] = {}

    @property
    def closing(self) -> bool:
        """True while SLACK connections beyond the limit wait for older ones to finish closing."""
        return self.open >= self.limit + SLACK

    def verdict(self) -> Verdict:
        """What happens to the next connection; it changes nothing (no connection may be waiting)."""
        if self.open < self.limit:
            return Verdict.ADMIT
        since = self._oldest_reclaimable_since()
        if since is not None:
            return Verdict.REPLACE if time.monotonic() - since >= MIN_IDLE_AGE_SECONDS else Verdict.WAIT
        return Verdict.WAIT if self._arriving() else Verdict.REFUSE

    def accepted(self, sock: socket.socket) -> None:
        self.open += 1
        self._unserved[sock.fileno()] = (weakref.ref(sock), time.monotonic())

    def arrived(self, fd: int) -> None:
        """The socket `fd` reached the server (its TLS handshake, if any, is done)."""
        self._unserved.pop(fd, None)

    def closed(self, fd: int) -> None:
        self.open -= 1
        self._unserved.pop(fd, None)

    def _stuck_handshake(self) -> tuple[int, float] | None:
        """The oldest socket that has not reached the server ARRIVAL_SECONDS after accept(), and when it was accepted."""
        fd, (_, since) = next(iter(self._unserved.items()), (-1, (None, 0.0)))
        return (fd, since) if fd >= 0 and time.monotonic() - since >= ARRIVAL_SECONDS else None

    def _oldest_reclaimable_since(self) -> float | None:
        """When the oldest connection that may be closed for a new one began to hold its slot."""
        stuck = self._stuck_handshake()
        candidates = (self.idle.oldest_idle_since(), stuck[1] if stuck else None)
        return min((since for since in candidates if since is not None), default=None)

    def _arriving(self) -> bool:
        """Connections accepted lately have not reached the server yet: idle ones to come."""
        newest = next(reversed(self._unserved.values()), None)
        return newest is not None and time.monotonic() - newest[1] < ARRIVAL_SECONDS

    def replace(self) -> None:
        stuck, server_since = self._stuck_handshake(), self.idle.oldest_idle_since()
        if stuck is not None and (server_since is None or stuck[1] <= server_since):
            self._shut_down(stuck[0])
            what = "the oldest one still in its TLS handshake"
        else:
            self.idle.close_oldest_idle()
            what = "the oldest one not served (idle, or its request waiting on the client)"
        _refusals.log(logging.WARNING, "closed idle", "%d client connections open, the limit is %d: closed %s",
                      self.open, self.limit, what)

    def _shut_down(self, fd: int) -> None:
        """Shut the socket down (asyncio sees its end and closes it: the descriptor is never
        closed under asyncio's feet, nor reused while it still watches it)."""
        ref, _ = self._unserved.pop(fd)
        sock = ref()
        if sock is not None:
            with contextlib.suppress(OSError):  # already gone
                sock.shutdown(socket.SHUT_RDWR)

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
            guard.closed(self.fileno())


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
            # BlockingIOError when none is waiting: nothing closed for it. _accept: the raw accept (an fd)
            fd, address = self._accept()  # type: ignore[attr-defined]  # _socket.socket's: not in typeshed
            if verdict is Verdict.REFUSE:
                self.guard.refuse()
                socket.close(fd)
                continue
            if verdict is Verdict.REPLACE:
                self.guard.replace()
            conn = _CountedSocket(self.family, self.type, self.proto, fileno=fd)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            conn._guard = self.guard
            self.guard.accepted(conn)
            return conn, address
        raise BlockingIOError


# The kernel's send buffer of each client connection (Linux doubles it for its bookkeeping).
# Left to autotuning it grows to net.ipv4.tcp_wmem's maximum, 4 MiB on Debian: a client that
# does not read kept a 1.8 MB /metrics body in the kernel, out of reach of the write timeout
# (the response had "gone out") and of the process's memory figures, though the unit's cgroup
# is charged for it. 256 KiB keeps loopback and LAN scrapes at full speed; across 100 ms of
# round trip it allows about 5 MB/s.
SEND_BUFFER = 256 * 1024
# What asyncio reads a TLS connection's bytes into, per connection from accept() on (asyncio's
# SSLProtocol.max_size, 256 KiB, allocated and zeroed for each): 1,500 handshakes left half done
# held 450 MB (tests/bench/hostile.py). A TLS record is at most 16 KiB of plaintext.
TLS_READ_BUFFER = 32 * 1024


class GuardedSite(web.TCPSite):
    """web.TCPSite whose listening sockets count what they accept through `runner.guard` (a
    JsonErrorAppRunner's), with a longer accept queue (BACKLOG); a TLS handshake gets
    `handshake_timeout` seconds, not asyncio's 60, and TLS_READ_BUFFER bytes to read into."""

    __slots__ = ("_handshake_timeout",)

    def __init__(self, runner: web.BaseRunner, host: str, port: int, *, handshake_timeout: float = 10.0,
                 backlog: int = BACKLOG, **kwargs: Any) -> None:
        super().__init__(runner, host, port, backlog=backlog, **kwargs)
        self._handshake_timeout = handshake_timeout

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site; TCPSite.start's create_server is replaced below
        if self._ssl_context is not None:  # a class attribute: every TLS connection of this process
            asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BUFFER
        # the runner is a JsonErrorAppRunner (advisor/server/errors.py, which imports this module)
        guard: ConnectionGuard = self._runner.guard  # type: ignore[attr-defined]  # typed as aiohttp's BaseRunner
        if self._runner.server is None:
            raise RuntimeError("the runner is not set up")  # as web.TCPSite.start asserts
        server = await asyncio.get_running_loop().create_server(
            self._runner.server, self._host, self._port, ssl=self._ssl_context, backlog=self._backlog,
            reuse_address=self._reuse_address, reuse_port=self._reuse_port, start_serving=False,
            ssl_handshake_timeout=self._handshake_timeout if self._ssl_context else None)
        for sock in server.sockets:
            # asyncio hands out TransportSocket wrappers; accept() is the socket's
            guard.listen(sock._sock)  # type: ignore[attr-defined]  # TransportSocket's socket: private, not in typeshed
        await server.start_serving()
        self._server = server
        if "_bound_port" in web.TCPSite.__slots__:  # newer aiohttp answers `port` from it; older ones have none
            self._bound_port = server.sockets[0].getsockname()[1] if server.sockets else self._port
