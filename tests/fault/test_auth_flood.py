"""Strangers sending wrong passwords while Prometheus scrapes: `zfs-advisor serve` on 127.0.0.1
with a basic-auth user (bcrypt cost 10, as `htpasswd -nBC 10` makes), 50 clients each sending
GET /metrics with a new wrong password as fast as they are answered, from one address and from
ten (127.0.0.2-11), while the right password scrapes once a second. `facts_max_age_seconds = 0`:
every scrape reads the kstats in a worker thread, as a scrape does whenever its facts are stale.

Every scrape must answer 200 within 3 s (Prometheus' default scrape timeout is 10 s; before bcrypt
had a thread of its own a scrape took 20 s, tests/bench/auth_flood.py), and every stranger gets
a JSON 401 or 503 (too many checks waiting). With the strangers on the scraper's own address, a
scraper whose password is not remembered yet (after a restart) is not locked out: its first
login is answered within Prometheus' scrape timeout (before, it got 429 for as long as the
strangers went on).
"""
from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time

import aiohttp
import pytest

from support import RECORDING
from support.service import Service
from support.tls import bcrypt_hash
from tests.fault.tally import FULL

PASSWORD = "the-scrapers-password"
STRANGERS = 50
SECONDS = 15 if FULL else 5


def _authorization(password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"prometheus:{password}".encode()).decode()}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("auth-flood")
    web_config = tmp / "web.yml"
    web_config.write_text(f"basic_auth_users:\n  prometheus: {bcrypt_hash(PASSWORD, rounds=10)}\n")
    config = tmp / "config.toml"  # every scrape reads the kstats afresh, in a worker thread
    config.write_text("facts_max_age_seconds = 0\n")
    with Service(RECORDING, tmp, "--web.config.file", str(web_config), "--config", str(config)) as running:
        yield f"http://127.0.0.1:{running.port}/metrics"


async def _stranger(url: str, source: str, until: float, answers: list[str | None]) -> None:
    """Wrong passwords until `until`; appends None per acceptable answer, else what was wrong."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(source, 0))) as session:
        while time.monotonic() < until:
            try:
                async with session.get(url, headers=_authorization(secrets.token_hex(8)),
                                       timeout=aiohttp.ClientTimeout(total=30)) as resp:
                    body = await resp.read()
                    error = json.loads(body)["error"] if resp.content_type == "application/json" else {}
                    ok = resp.status in (401, 503) and error.get("status") == resp.status
                    answers.append(None if ok else f"{resp.status} {body[:200]!r}")
                    if resp.status == 503 and "Retry-After" not in resp.headers:
                        answers[-1] = "503 without Retry-After"
            except aiohttp.ClientError as exc:
                answers.append(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("addresses", [1, 10])
async def test_wrong_passwords_do_not_stall_the_scrape(service, addresses, tally):
    # it scraped before the strangers came
    async with aiohttp.ClientSession() as prometheus, prometheus.get(service, headers=_authorization(PASSWORD)) as first:
        await first.read()  # a body left unread leaves its connection open past the session
        assert first.status == 200
    until = time.monotonic() + SECONDS
    answers: list[str | None] = []
    flood = [asyncio.create_task(_stranger(service, f"127.0.0.{2 + i % addresses}", until, answers))
             for i in range(STRANGERS)]
    scrapes = []
    async with aiohttp.ClientSession() as prometheus:
        while time.monotonic() < until:
            started = time.monotonic()
            try:
                async with prometheus.get(service, headers=_authorization(PASSWORD),
                                          timeout=aiohttp.ClientTimeout(total=10)) as resp:  # Prometheus' default
                    await resp.read()
                    scrapes.append((resp.status, time.monotonic() - started))
            except TimeoutError:
                scrapes.append((None, time.monotonic() - started))
            await asyncio.sleep(1)  # the scraper's pace through the flood
    await asyncio.gather(*flood)
    scraped = all(status == 200 and took < 3 for status, took in scrapes)
    tally.cases(len(answers))
    for problem in answers:
        tally.fault(scraped and problem is None)
    print(f"{addresses} address(es): {len(answers)} wrong passwords answered; scrapes (s): "
          + ", ".join(f"{took:.2f}" for _, took in scrapes))
    assert scraped, scrapes
    assert not [p for p in answers if p], [p for p in answers if p][:5]


@pytest.fixture
def restarted(tmp_path):
    """A service whose scraper has not logged in yet."""
    web_config = tmp_path / "web.yml"
    web_config.write_text(f"basic_auth_users:\n  prometheus: {bcrypt_hash(PASSWORD, rounds=10)}\n")
    with Service(RECORDING, tmp_path, "--web.config.file", str(web_config)) as running:
        yield f"http://127.0.0.1:{running.port}/metrics"


async def test_strangers_on_the_scrapers_address_do_not_lock_out_its_first_login(restarted, tally):
    """50 strangers guessing the scraper's own user's password from 127.0.0.1, its address; its
    first login, 1 s into their flood, waits for the checks ahead of it (about 50 x 60-100 ms of
    bcrypt on 2 cores), not for them to stop: wrong passwords are still being answered after it.
    (Judged by that order, not by a time bound: on a loaded machine the checks ahead of it take
    longer, and a lock-out would still show as the login answered only after the flood.)"""
    until = time.monotonic() + 12
    answers: list[str | None] = []
    flood = [asyncio.create_task(_stranger(restarted, "127.0.0.1", until, answers)) for _ in range(STRANGERS)]
    await asyncio.sleep(1)  # the scenario: its first login comes 1 s into the flood
    started = time.monotonic()
    # a longer wait than Prometheus' 10 s: the order below is the test, and on a loaded machine
    # the bcrypt checks ahead of the login took longer than 10 s (an idle one: 2-5 s)
    async with aiohttp.ClientSession() as prometheus, prometheus.get(
            restarted, headers=_authorization(PASSWORD), timeout=aiohttp.ClientTimeout(total=30)) as resp:
        status, took = resp.status, time.monotonic() - started
        answered_before = len(answers)
    await asyncio.gather(*flood)
    answered_after = len(answers) - answered_before
    tally.cases()
    tally.fault(status == 200 and answered_after > 0)
    print(f"first login among {STRANGERS} strangers on its address: HTTP {status} in {took:.2f} s; "
          f"{len(answers)} wrong passwords answered, {answered_after} of them after it")
    assert status == 200 and answered_after > 0, (status, took, answered_after)
    assert not [p for p in answers if p], [p for p in answers if p][:5]
