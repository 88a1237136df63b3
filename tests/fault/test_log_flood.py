"""A flood of hostile requests cannot flood the log: `zfs-advisor serve` (a process on 127.0.0.1
replaying a lab recording, log level info, JSON lines) gets thousands of malformed and hostile
requests, each different in its first 80 characters, from 20 clients at once for 5 s (15 s in
a full run); the log must grow by less than 10 kB a second (every line a client can cause is
rate-limited by its kind, advisor/process/logs.py), no answer may be a 5xx, and /healthz answers after."""
from __future__ import annotations

import asyncio
import collections
import random
import time

from support import HOSTS
from support.rawhttp import exchange, get, judge
from support.service import Service

from tests.fault.tally import FULL

SNAPSHOT = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"
CLIENTS = 20
SECONDS = 15.0 if FULL else 5.0
MAX_LOG_BYTES_PER_SECOND = 10_000


def hostile(rng: random.Random) -> bytes:
    """One request of a random kind, with random text where a client chooses it."""
    junk = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rng.randint(8, 120)))
    kinds = [
        lambda: f"{junk} / HTTP/1.1\r\nHost: x\r\n\r\n".encode(),  # not a method
        lambda: f"GET /{junk} HTTP/7.{rng.randint(0, 9)}\r\nHost: x\r\n\r\n".encode(),  # not a version
        lambda: f"GET /healthz HTTP/1.1\r\nHost: x\r\n{junk}\x01: y\r\n\r\n".encode(),  # not a header
        lambda: get(f"/{junk}"),  # 404
        lambda: get(f"/v1/probes?limit={rng.randint(1, 9) * 10 ** rng.randint(4000, 4290)}"[:6000]),
        lambda: get(f"/v1/changes?limit={'9' * rng.randint(5, 5000)}&{junk}=1"),
        lambda: get(f"/recommend?workload={junk}"),
        lambda: get(f"/recommend?workload=postgres&pool={junk};reboot"),
        lambda: get(f"/v1/plan?disks={rng.randint(257, 10**9)}&size=4T&seq={junk}"),
        lambda: get(f"/v1/probes/{junk}"),
        lambda: get(f"/{junk}", f"User-Agent: {junk * 60}\r\nReferer: {junk * 60}\r\n"),  # long access-log fields
        lambda: f"DELETE /v1/workloads/{junk} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),  # 405
        lambda: b"\x16\x03\x01" + junk.encode() + b"\r\n\r\n",  # TLS to a plain port
        lambda: f"POST /v1/probes HTTP/1.1\r\nHost: x\r\nContent-Length: -{junk[:5]}\r\n\r\n".encode(),
    ]
    return rng.choice(kinds)()


async def _flood(port: int, seed: int, until: float, statuses: collections.Counter, problems: list[str]) -> None:
    rng = random.Random(seed)
    while time.monotonic() < until:
        answers = await exchange(port, hostile(rng), timeout=1.0)
        statuses.update(status for status, _, _ in answers)
        statuses["requests"] += 1
        if problem := judge(answers):
            problems.append(problem)


async def test_a_flood_of_hostile_requests_grows_the_log_by_less_than_10_kb_a_second(tmp_path, tally):
    env = {"ZFS_ADVISOR_LOG_LEVEL": "info", "ZFS_ADVISOR_STATE_DIR": str(tmp_path / "state"), "ZFS_ADVISOR_MODEL": "false"}
    with Service(SNAPSHOT, tmp_path, env=env) as service:
        assert (await exchange(service.port, get("/healthz")))[0][0] == 200
        before, started = service.log.stat().st_size, time.monotonic()
        statuses: collections.Counter = collections.Counter()
        problems: list[str] = []
        await asyncio.gather(*(_flood(service.port, seed, started + SECONDS, statuses, problems)
                               for seed in range(CLIENTS)))
        took = time.monotonic() - started
        grew = service.log.stat().st_size - before
        healthy = (await exchange(service.port, get("/healthz")))[0][0] == 200
        alive = service.proc.poll() is None
    rate = grew / took
    print(f"{statuses['requests']} hostile requests in {took:.1f} s from {CLIENTS} clients: the log grew "
          f"{grew} bytes ({rate:.0f} B/s); answers {dict(sorted((k, v) for k, v in statuses.items() if k != 'requests'))}")
    ok = rate < MAX_LOG_BYTES_PER_SECOND and not problems and healthy and alive and statuses["requests"] >= 1000
    tally.cases(statuses["requests"])
    tally.fault(ok)
    assert not problems, problems[:5]
    assert rate < MAX_LOG_BYTES_PER_SECOND, service.log.read_text()[-3000:]
    assert healthy and alive and statuses["requests"] >= 1000, statuses
