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
* failed checks are limited per client address (a token bucket: `burst` at once, then one every
  1/`per_second` s; IPv6 per /64): beyond that a new password from that address is answered 429
  with Retry-After without running bcrypt. Remembered credentials skip the limit, so a scraper
  that knows its password is never refused because a stranger shares its address.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import math
import secrets
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from advisor.server.errors import json_error
from advisor.webconfig import parse_basic

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
    """A token bucket of password tries per client address, given back when a try succeeds:
    `burst` failures at once, refilled at `per_second`; at most `max_addresses` buckets (the
    least recently used go first)."""

    def __init__(self, burst: int = 10, per_second: float = 0.5, max_addresses: int = 4096) -> None:
        self.burst, self.per_second, self.max_addresses = burst, per_second, max_addresses
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # address -> (tokens, at)

    @staticmethod
    def client(remote: str | None) -> str:
        """The address a bucket is kept for: the peer's, an IPv6 peer's /64 (one host's share)."""
        try:
            address = ipaddress.ip_address((remote or "").split("%", 1)[0])
        except ValueError:
            return remote or "unknown"
        if address.version == 6 and address.ipv4_mapped is None:
            return str(ipaddress.ip_network(f"{address}/64", strict=False))
        return str(getattr(address, "ipv4_mapped", None) or address)

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.per_second)

    def take(self, client: str) -> float:
        """Take one try for `client` (before the check, so that tries under way count): 0 when
        taken, else the seconds until one is there (nothing taken)."""
        now = time.monotonic()
        tokens = self._tokens(client, now)
        if tokens < 1:
            return (1 - tokens) / self.per_second
        self._buckets[client] = (tokens - 1, now)
        self._buckets.move_to_end(client)
        while len(self._buckets) > self.max_addresses:
            self._buckets.popitem(last=False)
        return 0.0

    def give_back(self, client: str) -> None:
        """The try succeeded: it does not count as a failure."""
        if client in self._buckets:
            tokens, at = self._buckets[client]
            self._buckets[client] = (min(float(self.burst), tokens + 1), at)


class PasswordChecks:
    """`check()` answers whether a Basic Authorization header names a user of `users` (user ->
    bcrypt hash) with the right password; see the module's docstring for what bounds its cost."""

    def __init__(self, *, cache_size: int = 1024, max_pending: int = 32,
                 failures: FailureLimiter | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bcrypt")
        self._key = secrets.token_bytes(32)
        self._verified, self._refused = _Lru(cache_size), _Lru(cache_size)
        self.max_pending, self.pending = max_pending, 0
        self.failures = failures or FailureLimiter()
        self.bcrypt_checks = 0  # bcrypt runs (tests: a remembered password costs none)

    async def check(self, header: str | None, remote: str | None, users: dict[str, str]) -> bool:
        """True for the right credentials; False for none or wrong ones; raises the 429 (too many
        failures from this client) or 503 (too many checks waiting) JSON error."""
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
        client = self.failures.client(remote)
        if (wait := self.failures.take(client)) > 0:
            seconds = math.ceil(wait)
            raise json_error(429, f"too many failed logins from {client}: retry in {seconds} s",
                             headers={"Retry-After": str(seconds)})
        if self.pending >= self.max_pending:
            self.failures.give_back(client)
            raise json_error(503, f"busy: {self.pending} password checks waiting; retry later",
                             headers={"Retry-After": "1"})
        self.pending += 1
        try:
            # an unknown user costs a check against a dummy hash too: timing does not tell who exists
            ok = await asyncio.get_running_loop().run_in_executor(
                self._pool, _bcrypt_check, password.encode(), (known or _DUMMY_HASH).encode())
        finally:
            self.pending -= 1
            self.bcrypt_checks += 1
        if ok and known is not None:
            self._verified.add(key)
            self.failures.give_back(client)
            return True
        self._refused.add(key)
        return False

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
