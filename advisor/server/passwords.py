"""Basic-auth password checks that strangers cannot turn against the scrape.

bcrypt is slow on purpose (about 100 ms at cost 10). Run in the worker threads that also render
/metrics, 50 clients sending wrong passwords held an authenticated scrape for 20 s, past
Prometheus' default 10 s scrape timeout (tests/bench/auth_flood.py, docs/security.md). So:

* bcrypt runs in an executor of its own, one thread: at most one core goes to password checks,
  and the renders never queue behind them; at most `max_pending` checks wait (503 beyond);
* verified credentials are remembered, and so are refused ones, each in a bounded LRU keyed by
  an HMAC (under a key made at start) of user, password and the user's hash: a scrape every 15 s
  pays bcrypt once, a client repeating a wrong password pays it once, and a changed hash is a
  new key. Neither password nor an unsalted digest of it is kept;
* no client is refused for what another client did: a correct password is always checked, as the
  Prometheus exporter toolkit does. The checks wait in three queues, each first come first served,
  for the one bcrypt thread: tries within their client's budget of failures (a token bucket per
  user and client address, `burst` at once, then one every 1/`per_second` s; unknown users share
  one bucket per address, an IPv6 client per /64), then the others, and last the tries on a
  connection that has sent a wrong password before. Strangers guessing from the address a scraper
  uses slow its first login by the checks queued ahead of it, at most `max_pending` (503 with
  Retry-After beyond, before any bcrypt), never lock it out; remembered credentials skip the
  queues.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import secrets
import time
import weakref
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from advisor.config.webconfig import parse_basic
from advisor.server.errors import json_error

_DUMMY_HASH = "$2b$10$" + "." * 53  # well-formed, matches no password


def _bcrypt_check(password: bytes, hashed: bytes) -> bool:
    import bcrypt  # only a server with basic_auth_users needs it

    try:
        return bcrypt.checkpw(password[:72], hashed)  # bcrypt reads at most 72 bytes; bcrypt 5 refuses more
    except ValueError:
        return False


class _Lru:
    """A bounded set of keys, the least recently seen dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._keys: OrderedDict[bytes, None] = OrderedDict()

    def __contains__(self, key: bytes) -> bool:
        if key in self._keys:
            self._keys.move_to_end(key)
            return True
        return False

    def add(self, key: bytes) -> None:
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self.size:
            self._keys.popitem(last=False)


class FailureLimiter:
    """A token bucket of password tries per client (a user at an address), given back when a try
    succeeds: `burst` failures at once, refilled at `per_second`; at most `max_clients` buckets
    (the least recently used go first)."""

    def __init__(self, burst: int = 10, per_second: float = 0.5, max_clients: int = 4096) -> None:
        self.burst, self.per_second, self.max_clients = burst, per_second, max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, at)

    @staticmethod
    def client(user: str | None, remote: str | None) -> str:
        """Whose tries a bucket counts: `user` (None: a user not configured) at the peer's
        address, or an IPv6 peer's /64 (one host's share)."""
        try:
            address = ipaddress.ip_address((remote or "").split("%", 1)[0])
        except ValueError:
            where = remote or "unknown"
        else:
            if address.version == 6 and address.ipv4_mapped is None:
                where = str(ipaddress.ip_network(f"{address}/64", strict=False))
            else:
                where = str(getattr(address, "ipv4_mapped", None) or address)
        return f"{'?' if user is None else user}@{where}"

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.per_second)

    def take(self, client: str) -> bool:
        """Take one try for `client` (before the check, so that tries under way count): False
        when its budget is spent (nothing taken)."""
        now = time.monotonic()
        tokens = self._tokens(client, now)
        if tokens < 1:
            return False
        self._buckets[client] = (tokens - 1, now)
        self._buckets.move_to_end(client)
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        return True

    def give_back(self, client: str) -> None:
        """The try succeeded: it does not count as a failure."""
        if client in self._buckets:
            tokens, at = self._buckets[client]
            self._buckets[client] = (min(float(self.burst), tokens + 1), at)


class PasswordChecks:
    """`check()` answers whether a Basic Authorization header names a user of `users` (user ->
    bcrypt hash) with the right password; see the module's docstring for what bounds its cost."""

    def __init__(self, *, cache_size: int = 1024, max_pending: int = 64,
                 failures: FailureLimiter | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bcrypt")
        self._key = secrets.token_bytes(32)
        self._verified, self._refused = _Lru(cache_size), _Lru(cache_size)
        self.max_pending = max_pending
        self.failures = failures or FailureLimiter()
        # checks waiting for the bcrypt thread: within their client's budget, beyond it, and beyond
        # it on a connection that sent a wrong password before
        self._queues: tuple[deque[_Check], ...] = (deque(), deque(), deque())
        self._failed_on: weakref.WeakSet[object] = weakref.WeakSet()  # connections (transports), weakly
        self._running: asyncio.Task[None] | None = None
        self.bcrypt_checks = 0  # bcrypt runs (tests: a remembered password costs none)

    @property
    def pending(self) -> int:
        return sum(map(len, self._queues)) + (self._running is not None and not self._running.done())

    async def check(self, header: str | None, remote: str | None, users: dict[str, str],
                    connection: object | None = None) -> bool:
        """True for the right credentials; False for none or wrong ones; raises the 503 JSON error
        (too many checks waiting). `connection` (its transport) remembers a wrong password sent on it."""
        credentials = parse_basic(header)
        if credentials is None:
            return False
        user, password = credentials
        known = users.get(user)
        key = hmac.new(self._key, b"\0".join(s.encode() for s in (user, password, known or "")),
                       hashlib.sha256).digest()
        if key in self._verified:
            return True
        if key in self._refused:
            return False
        if self.pending >= self.max_pending:
            raise json_error(503, f"busy: {self.pending} password checks waiting; retry later",
                             headers={"Retry-After": "1"})
        client = self.failures.client(user if known is not None else None, remote)
        within_budget = self.failures.take(client)
        # an unknown user costs a check against a dummy hash too: timing does not tell who exists
        check = _Check(password.encode(), (known or _DUMMY_HASH).encode(), asyncio.get_running_loop().create_future())
        failed_before = connection is not None and connection in self._failed_on
        self._queues[0 if within_budget else 2 if failed_before else 1].append(check)
        if self._running is None or self._running.done():
            self._running = asyncio.create_task(self._run_queued())
        ok = await asyncio.shield(check.done)  # a client that leaves does not cancel the queue's run
        if ok and known is not None:
            self._verified.add(key)
            if within_budget:
                self.failures.give_back(client)
            return True
        self._refused.add(key)
        if connection is not None:
            self._failed_on.add(connection)
        return False

    async def _run_queued(self) -> None:
        loop = asyncio.get_running_loop()
        while queue := next((q for q in self._queues if q), None):
            check = queue.popleft()
            try:
                ok = await loop.run_in_executor(self._pool, _bcrypt_check, check.password, check.hashed)
            except BaseException as exc:  # the pool shut down (close()), or the task cancelled
                check.done.cancel()
                for waiting_queue in self._queues:
                    for waiting in waiting_queue:
                        waiting.done.cancel()
                    waiting_queue.clear()
                if isinstance(exc, Exception):
                    return
                raise
            finally:
                self.bcrypt_checks += 1
            if not check.done.done():
                check.done.set_result(ok)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass(slots=True)
class _Check:
    password: bytes
    hashed: bytes
    done: asyncio.Future[bool]
