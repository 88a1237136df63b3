#!/usr/bin/env python3
"""Wrong passwords against a scrape: does an authenticated /metrics stay within Prometheus' 10 s
scrape timeout while strangers send wrong passwords (docs/security.md)?

    tests/bench/auth_flood.py [--root SNAPSHOT] [--clients 50] [--addresses 1] [--seconds 20] [--cost 10]
                              [--first-login] [--new-connections]

Starts `zfs-advisor serve --root SNAPSHOT` on a free loopback port with a web config holding one
basic-auth user (a bcrypt hash of cost --cost), scrapes /metrics with the right password five
times, then lets --clients clients send GET /metrics with a new wrong password each, as fast as
they are answered, for --seconds, from --addresses loopback addresses (127.0.0.2, .3, ...: each
user at each address has a budget of failed logins; 0: from 127.0.0.1, the scraper's), while the right password scrapes once a second. Prints the
scrape times (min / median / max) before and during the flood and what the strangers got. With
--first-login nothing is scraped before the flood: the right password is first checked 1 s into
it, as after a restart (the verified credentials are remembered in memory only).
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import bcrypt

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO / "tests" / "fixtures" / "hosts" / "2.3.2" / "ssd-mirror2x2" / "idle"
PASSWORD = "the-right-password"


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def scrape(session: aiohttp.ClientSession, url: str) -> tuple[int, float]:
    started = time.perf_counter()
    async with session.get(url, headers=basic("prometheus", PASSWORD), timeout=aiohttp.ClientTimeout(total=60)) as resp:
        await resp.read()
        return resp.status, time.perf_counter() - started


def summary(times: list[float]) -> str:
    ms = [t * 1000 for t in times]
    return f"{min(ms):.0f} / {statistics.median(ms):.0f} / {max(ms):.0f} ms (min / median / max, {len(ms)} scrapes)"


async def measure(port: int, clients: int, addresses: int, seconds: float, first_login: bool,
                  new_connections: bool) -> None:
    url = f"http://127.0.0.1:{port}/metrics"
    async with aiohttp.ClientSession() as good:
        if not first_login:
            quiet = [await scrape(good, url) for _ in range(5)]
            print(f"before the flood: {summary([t for _, t in quiet])}; statuses {sorted({s for s, _ in quiet})}")
        got: collections.Counter[int] = collections.Counter()
        stop = time.monotonic() + seconds

        async def stranger(i: int) -> None:
            host = f"127.0.0.{2 + i % addresses}" if addresses else "127.0.0.1"  # 0: the scraper's own address
            source = aiohttp.TCPConnector(local_addr=(host, 0), force_close=new_connections)
            async with aiohttp.ClientSession(connector=source) as bad:
                while time.monotonic() < stop:
                    try:
                        async with bad.get(url, headers=basic("prometheus", secrets.token_hex(8)),
                                           timeout=aiohttp.ClientTimeout(total=60)) as resp:
                            await resp.read()
                            got[resp.status] += 1
                            if resp.status == 429:  # as a polite client would; a rude one is refused as fast
                                await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))
                    except aiohttp.ClientError:
                        got[0] += 1

        flood = [asyncio.create_task(stranger(i)) for i in range(clients)]
        await asyncio.sleep(1)
        if first_login:
            status, took = await scrape(good, url)
            print(f"the right password's first login, 1 s into the flood: HTTP {status} in {took * 1000:.0f} ms")
        during = []
        while time.monotonic() < stop:
            during.append(await scrape(good, url))
            await asyncio.sleep(1)
        await asyncio.gather(*flood)
        print(f"during the flood of {clients} clients from {addresses} address(es): {summary([t for _, t in during])}; "
              f"statuses {sorted({s for s, _ in during})}")
        print(f"the strangers got: {dict(sorted(got.items()))} (0: connection error)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--addresses", type=int, default=1, choices=range(0, 250), metavar="0..249",
                        help="0: the strangers share the scraper's address, 127.0.0.1")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--cost", type=int, default=10)
    parser.add_argument("--new-connections", action="store_true",
                        help="each stranger's try on a new connection (a connection that failed is queued last)")
    parser.add_argument("--first-login", action="store_true",
                        help="no scrapes before the flood: the right password's first check comes 1 s into it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(args.cost)).decode()
        web = Path(tmp) / "web.yml"
        web.write_text(f"basic_auth_users:\n  prometheus: {hashed}\n")
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(REPO), "ZFS_ADVISOR_STATE_DIR": str(Path(tmp) / "state"),
               "ZFS_ADVISOR_LOG_LEVEL": "warning"}
        log = open(Path(tmp) / "serve.log", "wb")  # noqa: SIM115 - closed in the finally below, once the server stopped
        proc = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--root", str(args.root), "--port",
                                 str(port), "--web.config.file", str(web)], env=env, stdout=log, stderr=log, cwd=REPO)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    import http.client
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                    conn.request("GET", "/healthz")  # no credentials: the right password's first check is the bench's
                    if conn.getresponse().status == 401:
                        break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        print((Path(tmp) / "serve.log").read_text()[-2000:], file=sys.stderr)
                        return 1
                    time.sleep(0.2)
            asyncio.run(measure(port, args.clients, args.addresses, args.seconds, args.first_login,
                                args.new_connections))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
