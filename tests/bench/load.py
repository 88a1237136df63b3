#!/usr/bin/env python3
"""Load benchmark (bounded, loopback): many clients on /metrics, /recommend and /v1/facts.

    tests/bench/load.py [--snapshot DIR] [--datasets 10,10000] [--clients 50] [--seconds 20]

For each dataset count, a lab recording scaled to that many datasets (scale_snapshot.py) is
served as the CLI serves a replay (`python -m advisor serve --root DIR`, default settings,
an empty state directory) on 127.0.0.1. Then, one endpoint at a time, `--clients` real HTTP
clients (aiohttp, one connection each) ask `--rate` times a second each (0: as fast as they
are answered) for `--seconds`:
/metrics as Prometheus asks (OpenMetrics, gzip), /recommend?workload=postgres, /v1/facts
(plain JSON, the largest body), /recommend?dataset=tank/pg (one dataset's answer; `--scrape 15`
adds a Prometheus scrape every 15 s beside the clients). Meanwhile another process asks /healthz every 50 ms on a new
connection each time, and the service's RSS is sampled every 100 ms.

Prints one table: requests/s, p50/p99 latency, errors (anything but a 200, or a client
timeout), RSS before the load, its peak, after, and after `--idle` seconds idle, and the
worst /healthz latency, and the share of the time the service's event-loop thread was ready
to run but waited for a CPU (/proc/PID/schedstat: on a shared machine, latency that is not
the service's doing), and the service's CPU time (user + system) per request. Exits 1 when a target is missed: 0 errors, /healthz <= 100 ms,
RSS <= 200 MB, /recommend p99 <= 50 ms at 10 datasets (docs/reliability.md).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_snapshot  # noqa: E402 - after the sys.path line above

REPO = Path(__file__).resolve().parents[2]
HOSTS = REPO / "tests" / "fixtures" / "hosts"
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
ENDPOINTS = {
    "/metrics": {"Accept": PROMETHEUS_ACCEPT, "Accept-Encoding": "gzip"},
    "/recommend?workload=postgres": {"Accept-Encoding": "identity"},
    "/recommend?dataset=tank/pg": {"Accept-Encoding": "identity"},  # one dataset's answer (the recordings' tank/pg)
    "/v1/facts": {"Accept-Encoding": "identity"},
}
TARGETS = {"healthz_ms": 100.0, "rss_mb": 200.0, "recommend_p99_ms_at_10": 50.0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def serve(root: Path, state: Path, extra_env: dict[str, str], ready: str = "/metrics") -> tuple[subprocess.Popen, int]:
    """The service on a free loopback port, once `ready` answers 200 (/metrics: after the first collection)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "ZFS_ADVISOR_STATE_DIR": str(state),
           "ZFS_ADVISOR_LOG_LEVEL": "warning", **extra_env}
    # The log goes to a file beside the state: a pipe nobody reads fills at 64 KB, and then the
    # service blocks in its next log write (a burst of errors stalled /healthz for 10 s that way).
    log = state / "service.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--root", str(root), "--port", str(port)],
                                env=env, stdout=subprocess.DEVNULL, stderr=sink, cwd=REPO)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"service exited: {log.read_text(errors='replace')[-4000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", ready)
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.02)  # short: speed.py times the start-up with this loop
    proc.kill()
    raise SystemExit(f"service did not answer {ready} within 120 s")


def healthz_prober(port: int, stop, result) -> None:
    """In its own process: GET /healthz every 50 ms on a fresh connection; the worst latency."""
    worst, failures = 0.0, 0
    while not stop.is_set():
        started = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/healthz")
            ok = conn.getresponse().status == 200
            conn.close()
        except OSError:
            ok = False
        worst = max(worst, time.perf_counter() - started)
        failures += not ok
        time.sleep(0.05)
    result.put((worst, failures))


def runqueue_seconds(pid: int) -> float:
    """Time the service's main thread (its event loop) was ready to run but waited for a CPU."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9


def cpu_seconds(pid: int) -> float:
    """The service's user + system CPU time so far (all its threads): on a shared machine, what
    the load cost the service, where wall-clock latency also counts the neighbours."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssSampler(threading.Thread):
    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self._done = pid, 0.0, threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.1)

    def stop(self) -> float:
        self._done.set()
        self.join()
        return self.peak


async def scraper(session: aiohttp.ClientSession, port: int, every: float, deadline: float) -> None:
    """Prometheus beside the clients: /metrics every `every` seconds (0: never)."""
    while every > 0 and time.monotonic() < deadline:
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with session.get(f"http://127.0.0.1:{port}/metrics", headers=ENDPOINTS["/metrics"]) as resp:
                await resp.read()
        await asyncio.sleep(every)


async def hammer(port: int, path: str, headers: dict[str, str], clients: int, seconds: float, rate: float,
                 scrape: float = 0.0) -> dict:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    deadline = time.monotonic() + seconds
    timeout = aiohttp.ClientTimeout(total=60)
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False) as session:
        async def client() -> None:
            started = None
            await asyncio.sleep(random.random() / rate if rate > 0 else 0)  # not all at the same instant
            while time.monotonic() < deadline:
                if rate > 0 and started is not None:  # paced: start the next request 1/rate s after the last one started
                    await asyncio.sleep(max(0.0, 1 / rate - (time.perf_counter() - started)))
                started = time.perf_counter()
                try:
                    async with session.get(f"http://127.0.0.1:{port}{path}", headers=headers) as resp:
                        async for _ in resp.content.iter_chunked(1 << 16):
                            pass
                        status = resp.status
                except (aiohttp.ClientError, TimeoutError) as exc:
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                    continue
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    errors[str(status)] = errors.get(str(status), 0) + 1

        started = time.monotonic()
        await asyncio.gather(scraper(session, port, scrape, deadline), *(client() for _ in range(clients)))
        elapsed = time.monotonic() - started
    latencies.sort()
    pick = (lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000) if latencies else (lambda q: 0)
    return {"requests": len(latencies), "rps": len(latencies) / elapsed, "p50": pick(0.5), "p99": pick(0.99),
            "errors": sum(errors.values()), "error_kinds": errors}


def run_one(port: int, pid: int, path: str, headers: dict[str, str], args) -> dict:
    ctx = multiprocessing.get_context("spawn")
    stop, result = ctx.Event(), ctx.Queue()
    prober = ctx.Process(target=healthz_prober, args=(port, stop, result))
    before, waited, started, cpu = rss_mb(pid), runqueue_seconds(pid), time.monotonic(), cpu_seconds(pid)
    sampler = RssSampler(pid)
    sampler.start()
    prober.start()
    row = asyncio.run(hammer(port, path, headers, args.clients, args.seconds, args.rate, args.scrape))
    after = rss_mb(pid)
    row["cpu_ms_per_request"] = 1000 * (cpu_seconds(pid) - cpu) / max(1, row["requests"])
    row["cpu_wait"] = 100 * (runqueue_seconds(pid) - waited) / (time.monotonic() - started)
    time.sleep(args.idle)
    row.update(before=before, peak=sampler.stop(), after=after, idle=rss_mb(pid))
    stop.set()
    row["healthz_ms"], row["healthz_failures"] = result.get(timeout=30)
    row["healthz_ms"] *= 1000
    prober.join()
    return row


def default_snapshot() -> Path:
    found = sorted(p.parent for p in HOSTS.glob("*/*/idle/manifest.json"))
    if not found:
        raise SystemExit(f"no recorded snapshot under {HOSTS}; pass --snapshot DIR")
    return found[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshot", type=Path, help="host snapshot to scale (default: newest idle lab recording)")
    parser.add_argument("--datasets", default="10,10000", help="comma-separated dataset counts")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0, help="load per endpoint")
    parser.add_argument("--rate", type=float, default=2.0,
                        help="requests per second per client (0: as fast as answered, a saturating closed loop)")
    parser.add_argument("--scrape", type=float, default=0.0,
                        help="meanwhile, a /metrics scrape every this many seconds (0: none)")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before the idle RSS")
    parser.add_argument("--endpoints", default=",".join(ENDPOINTS), help="comma-separated, from: " + ", ".join(ENDPOINTS))
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="extra environment for the service (e.g. MALLOC_ARENA_MAX=2)")
    args = parser.parse_args(argv)
    snapshot = args.snapshot or default_snapshot()
    extra_env = dict(e.split("=", 1) for e in args.env)
    print(f"snapshot: {snapshot}\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; "
          f"{args.clients} clients at {args.rate or 'full'} requests/s each, {args.seconds:.0f} s per endpoint; service env {extra_env or '-'}\n")
    print("| datasets | endpoint | requests/s | p50 ms | p99 ms | errors | RSS MB before / peak / after / idle "
          "| /healthz worst ms | loop waited for a CPU | service CPU ms per request |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|---:|")
    missed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="zfs-advisor-load-") as tmp:
        for n in (int(x) for x in args.datasets.split(",")):
            root = scale_snapshot.scale(snapshot, Path(tmp) / f"n{n}", n)
            (state := Path(tmp) / f"state{n}").mkdir()
            proc, port = serve(root, state, extra_env)
            try:
                for path in args.endpoints.split(","):
                    r = run_one(port, proc.pid, path, ENDPOINTS[path], args)
                    kinds = f" ({r['error_kinds']})" if r["errors"] else ""
                    print(f"| {n:,} | `{path}` | {r['rps']:.1f} | {r['p50']:.0f} | {r['p99']:.0f} "
                          f"| {r['errors']}{kinds} | {r['before']:.0f} / {r['peak']:.0f} / {r['after']:.0f} / "
                          f"{r['idle']:.0f} | {r['healthz_ms']:.0f} | {r['cpu_wait']:.0f} % "
                          f"| {r['cpu_ms_per_request']:.1f} |", flush=True)
                    where = f"{n} datasets {path}"
                    if r["errors"] or r["healthz_failures"]:
                        missed.append(f"{where}: {r['errors']} errors, {r['healthz_failures']} /healthz failures")
                    if r["healthz_ms"] > TARGETS["healthz_ms"]:
                        missed.append(f"{where}: /healthz took {r['healthz_ms']:.0f} ms")
                    if r["peak"] > TARGETS["rss_mb"]:
                        missed.append(f"{where}: RSS peaked at {r['peak']:.0f} MB")
                    if path.startswith("/recommend") and n <= 10 and r["p99"] > TARGETS["recommend_p99_ms_at_10"]:
                        missed.append(f"{where}: p99 {r['p99']:.0f} ms")
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    for line in missed:
        print(f"MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
