"""Basic auth's password checks (advisor/server/passwords.py) on the real app, plain HTTP on
127.0.0.1 (basic auth needs TLS only beyond loopback): bcrypt in a thread of its own, verified
and refused credentials remembered, tries beyond a client's budget of failures queued behind the
others, never refused for what another client did."""
from __future__ import annotations

import asyncio
import base64
import time

import pytest
from aiohttp import web

from advisor.api.appkeys import PASSWORDS
from advisor.config.settings import Settings
from advisor.server.passwords import FailureLimiter, PasswordChecks
from advisor.service.app import create_app
from support import RECORDING
from support.tls import bcrypt_hash
from support.waiting import await_until

PASSWORD = "correct horse battery staple"


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


async def start(http_client, tmp_path, rounds: int = 4, checks: PasswordChecks | None = None, remote: str | None = None):
    web_config = tmp_path / "web.yml"
    web_config.write_text(f"basic_auth_users:\n  alice: {bcrypt_hash(PASSWORD, rounds)}\n")
    app = create_app(Settings(root=str(RECORDING), web_config_file=web_config, state_dir=str(tmp_path / "state"),
                              model=False))
    if checks is not None:
        app[PASSWORDS].close()
        app[PASSWORDS] = checks
    if remote is not None:  # as test_api_token.py: the peer address a client connecting from elsewhere has
        @web.middleware
        async def from_remote(request, handler):
            return await handler(request.clone(remote=remote))
        app.middlewares.insert(0, from_remote)
    return await http_client(app), app[PASSWORDS]


async def test_right_and_wrong_credentials_are_remembered(http_client, tmp_path):
    client, checks = await start(http_client, tmp_path)
    for _ in range(5):
        assert (await client.get("/healthz", headers=basic("alice", PASSWORD))).status == 200
    assert checks.bcrypt_checks == 1  # a scrape every 15 s pays bcrypt once
    for _ in range(5):
        resp = await client.get("/healthz", headers=basic("alice", "wrong"))
        assert resp.status == 401 and resp.headers["WWW-Authenticate"].startswith("Basic")
    assert checks.bcrypt_checks == 2  # and so does a client repeating a wrong password
    for user in ("eve", "alice "):
        assert (await client.get("/healthz", headers=basic(user, PASSWORD))).status == 401
    assert checks.bcrypt_checks == 4


async def test_a_stranger_at_the_scrapers_address_cannot_lock_it_out(http_client, tmp_path):
    """Wrong passwords for the scraper's own user from its own address spend their budget; the
    right password is still checked, and is then remembered."""
    checks = PasswordChecks(failures=FailureLimiter(burst=3, per_second=0.01))
    client, _ = await start(http_client, tmp_path, checks=checks)
    statuses = [(await client.get("/healthz", headers=basic("alice", f"guess-{i}"))).status for i in range(6)]
    assert statuses == [401] * 6 and checks.bcrypt_checks == 6  # every try checked: none refused unseen
    assert (await client.get("/metrics", headers=basic("alice", PASSWORD))).status == 200
    assert checks.bcrypt_checks == 7


async def test_tries_beyond_their_budget_wait_behind_the_others(http_client, tmp_path):
    """alice at 127.0.0.1 has spent her budget: her five tries queue behind one from 192.0.2.7,
    which is checked second (after the one already under way), not sixth."""
    limiter = FailureLimiter(burst=1, per_second=0.001)
    limiter.take(FailureLimiter.client("alice", "127.0.0.1"))
    checks = PasswordChecks(failures=limiter)
    local, _ = await start(http_client, tmp_path, rounds=10, checks=checks)
    remote, _ = await start(http_client, tmp_path, rounds=10, checks=checks, remote="192.0.2.7")
    order: list[str] = []

    async def attempt(client, name: str) -> None:
        await client.get("/healthz", headers=basic("alice", name))
        order.append(name)

    spent = [asyncio.create_task(attempt(local, f"local-{i}")) for i in range(5)]
    await await_until(lambda: checks.pending >= 5, 10, "the five local checks under way")
    await asyncio.gather(attempt(remote, "remote"), *spent)
    assert order.index("remote") <= 1, order


async def test_bcrypt_does_not_hold_the_worker_threads_that_render(http_client, tmp_path):
    """30 wrong passwords at once (cost 10, ~100 ms each): the default executor, where /metrics is
    rendered and the kstats read, still runs a job at once."""
    client, checks = await start(http_client, tmp_path, rounds=10)
    flood = [asyncio.create_task(client.get("/healthz", headers=basic("alice", f"guess-{i}"))) for i in range(30)]
    waits = []
    for _ in range(3):  # while the checks are under way (before, in the default executor: 5 s)
        await asyncio.sleep(0.25)  # the samples' pace, spread over the flood: no condition to wait for
        started = time.perf_counter()
        await asyncio.to_thread(lambda: None)
        waits.append(time.perf_counter() - started)
    statuses = sorted({resp.status for resp in await asyncio.gather(*flood)})
    assert max(waits) < 0.5, f"a worker-thread job waited {max(waits) * 1000:.0f} ms behind bcrypt"
    assert statuses == [401] and checks.bcrypt_checks == 30


async def test_checks_waiting_are_bounded(http_client, tmp_path):
    checks = PasswordChecks(max_pending=1)
    client, _ = await start(http_client, tmp_path, rounds=12, checks=checks)  # ~400 ms a check
    answers = await asyncio.gather(*(client.get("/healthz", headers=basic("alice", f"g{i}")) for i in range(3)))
    assert sorted(r.status for r in answers) == [401, 503, 503]
    assert all(r.headers["Retry-After"] == "1" for r in answers if r.status == 503)


def test_the_limiter_refills_and_keys_a_user_at_an_address():
    limiter = FailureLimiter(burst=2, per_second=20.0, max_clients=2)
    assert limiter.take("a") and limiter.take("a") and not limiter.take("a")
    time.sleep(0.06)  # the behaviour under test: 20 a second refill one failure in 0.05 s
    assert limiter.take("a")
    client = FailureLimiter.client
    assert client("alice", "2001:db8::1") == client("alice", "2001:db8::ffff") == "alice@2001:db8::/64"
    assert client("alice", "::ffff:192.0.2.7") == "alice@192.0.2.7" and client("bob", "fe80::1%eth0") == "bob@fe80::/64"
    assert client(None, None) == "?@unknown" and client("alice", "192.0.2.7") != client("bob", "192.0.2.7")
    for key in ("b", "c"):  # bounded: the least recently used bucket goes
        limiter.take(key)
    assert "a" not in limiter._buckets and len(limiter._buckets) == 2


@pytest.mark.parametrize("header", [None, "Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()])
async def test_what_is_not_basic_credentials_costs_nothing(header):
    checks = PasswordChecks()
    try:
        assert await checks.check(header, "127.0.0.1", {"alice": bcrypt_hash(PASSWORD)}) is False
        assert checks.bcrypt_checks == 0
    finally:
        checks.close()
