#!/usr/bin/env python3
"""Soak benchmark (loopback, outside CI): an hour of mixed load on a 10,000-dataset replay.

    tests/bench/soak.py [--minutes 60] [--datasets 10000] [--snapshot DIR] [--json PATH]

A lab recording scaled to `--datasets` datasets (scale_snapshot.py) is served as the CLI
serves a replay (`python -m advisor serve --root DIR`, default settings, an empty state
directory), in a process whose soft RLIMIT_NOFILE is the LimitNOFILE of
deploy/systemd/zfs-advisor.service (systemd's default soft limit, 1024, if the unit set none).
For `--minutes`, all at once, each kind of client in a process of its own (so that one
client's work does not delay another's clock):

- 3 Prometheus-like scrapers: /metrics every `--scrape-interval` s (OpenMetrics, gzip; the
  timeout Prometheus gives such a scrape: 10 s, or the interval when shorter), each body
  inflated and checked to end in `# EOF`;
- /recommend?workload=W at `--recommend-rate` requests/s, W in turn every workload the
  service lists at /v1/workloads (sent on time, not after the previous answer);
- /v1/facts bursts: `--facts-burst` requests at once (plain JSON, the largest body) every
  `--facts-every` s;
- `--slow-clients` half-sent requests held open (a header line more every 2 s), each
  renewed once the service drops it or after 60 s;
- /healthz every second, on a new connection each time;
- the recorded `zpool status` output of the served copy moved away for `--fail-for` s every
  `--fail-every` s and back (the replay reads it at each command run, so the source fails
  and recovers as a live one would); each scraper counts zfs_advisor_source_up going 1 -> 0
  and 0 -> 1.

Every `--sample-every` s: the service's RSS (/proc/PID/status VmRSS), open descriptors
(/proc/PID/fd), CPU time (/proc/PID/stat), the time its event-loop thread was ready to run but
waited for a CPU (/proc/PID/schedstat) and the machine's load average: on a shared machine,
latency that is not the service's doing.

Prints those over time (a row per 5 minutes, per sixth of a run under 30 minutes), one row
per endpoint (requests, p50, p99, max, 5xx, other errors: any other status but 200, a
timeout, a reset or an incomplete body; and the share of the run its client process waited for
a CPU, which its latencies include), what the slow clients saw, the service's log lines
per level with the first of each message, then the verdict. Exits 1 when a target is
missed: RSS drift under 10 % (the median over a minute at the end against the same after the
warm-up, the first 5 minutes; a fifth of a shorter run), /healthz p99 under 100 ms, no 5xx and
no other error, descriptors below the limit and no line of a limit reached in the service's
log, each failure of the source and its recovery seen by every scraper, the service alive.
"""
from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import os
import queue
import re
import resource
import statistics
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # noqa: E402 - after the sys.path line above
import scale_snapshot  # noqa: E402 - after the sys.path line above

UNIT = load.REPO / "deploy" / "systemd" / "zfs-advisor.service"
SYSTEMD_DEFAULT_NOFILE = 1024  # systemd's DefaultLimitNOFILE soft value (systemd-system.conf(5))
FAILING_COMMAND = ["zpool", "status"]
FAILING_SOURCE = "zpool_status"
SOURCE_UP = re.compile(rb'^zfs_advisor_source_up\{source="' + FAILING_SOURCE.encode() + rb'"\} (\S+)$', re.MULTILINE)
# A failure is seen within a command run (commands_interval_seconds, 15 s) and a scrape; its
# recovery too: a cycle is made only if this much of the run is left after it.
SEE_SECONDS = 30.0
SCRAPERS = 3
HALF_REQUEST = b"GET /v1/facts HTTP/1.1\r\nHost: 127.0.0.1\r\n"
SLOW_HOLD_SECONDS = 60.0
# The service's log lines that say a descriptor limit was reached (advisor/server/connections.py, asyncio).
LIMIT_LOG = re.compile(r"Too many open files|the limit is \d+")
TARGETS = {"rss_drift": 0.10, "healthz_p99_ms": 100.0}
KINDS = ("/metrics", "/recommend", "/v1/facts", "/healthz", "slow clients")


def unit_nofile(unit: Path = UNIT) -> tuple[int, str]:
    """The soft file-descriptor limit the unit gives the service, and where it comes from."""
    name = unit.relative_to(load.REPO) if unit.is_relative_to(load.REPO) else unit
    for line in unit.read_text().splitlines():
        key, _, value = line.strip().partition("=")
        if key == "LimitNOFILE":
            soft = value.split(":")[0].strip()
            if not soft.isdigit():
                raise SystemExit(f"{name}: LimitNOFILE={value}: only a number (or soft:hard numbers) is supported here")
            return int(soft), f"LimitNOFILE={value} in {name}"
    return SYSTEMD_DEFAULT_NOFILE, f"{name} sets no LimitNOFILE: systemd's default soft limit"


def serve_limited(root: Path, state: Path, nofile: int):
    """load.serve, the service started with `nofile` as its soft RLIMIT_NOFILE (as systemd starts it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and nofile > hard:
        raise SystemExit(f"the unit's limit {nofile} is above this shell's hard limit {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))  # inherited by the service
    try:
        proc, port = load.serve(root, state, {})
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    limits = Path(f"/proc/{proc.pid}/limits").read_text()
    got = re.search(r"^Max open files\s+(\d+)", limits, re.MULTILINE)
    if not got or int(got.group(1)) != nofile:
        proc.kill()
        raise SystemExit(f"the service's descriptor limit is not {nofile}: {got and got.group(0)}")
    return proc, port


def cpu_seconds(pid: int) -> float:
    """User and system time of all the service's threads (/proc/PID/stat utime, stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def recorded_output(root: Path, argv_prefix: list[str]) -> Path:
    manifest = json.loads((root / "manifest.json").read_text())
    for command in manifest["commands"]:
        if command["argv"][:len(argv_prefix)] == argv_prefix:
            return root / command["stdout_file"]
    raise SystemExit(f"{root} recorded no `{' '.join(argv_prefix)}`")


def workload_names(port: int) -> list[str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/v1/workloads")
    return [w["name"] for w in json.loads(conn.getresponse().read())["workloads"]]


class Tally:
    """What one kind of client saw: latencies of the answers, their statuses, the failures."""

    def __init__(self, counter, slot: int):
        self.counter, self.slot = counter, slot
        self.ms: list[float] = []
        self.statuses: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()

    def answered(self, started: float, status: str) -> float:
        self.ms.append(ms := (time.perf_counter() - started) * 1000)
        self.statuses[status] += 1
        self.counter[self.slot] += 1
        return ms

    def failed(self, kind: str) -> None:
        self.errors[kind] += 1
        self.counter[self.slot] += 1

    def result(self) -> dict:
        return {"ms": sorted(self.ms), "statuses": dict(self.statuses), "errors": dict(self.errors)}


async def drain(resp: aiohttp.ClientResponse) -> bool:
    async for _ in resp.content.iter_chunked(1 << 16):
        pass
    return True


async def timed_get(session: aiohttp.ClientSession, url: str, headers: dict, tally: Tally, read=drain,
                    late_after: float | None = None):
    """GET url, its body read by `read` (False: incomplete); the answer's status into the tally,
    and an error if it came after `late_after` s (aiohttp checks its timeout only between reads)."""
    started = time.perf_counter()
    try:
        async with session.get(url, headers=headers) as resp:
            complete = await read(resp)
            ms = tally.answered(started, str(resp.status))
            if not complete:
                tally.failed("incomplete body")
            if late_after is not None and ms > late_after * 1000:
                tally.failed(f"over the {late_after:g} s timeout")
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        tally.failed(type(exc).__name__)


def session(timeout: float, **connector) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(**connector), auto_decompress=False,
                                 timeout=aiohttp.ClientTimeout(total=timeout))


async def ticks(deadline: float, interval: float, offset: float = 0.0, skip_late: bool = False):
    """Yields every `interval` s until the deadline, on schedule: a late tick does not delay the
    next; the ticks missed meanwhile are yielded at once (requests arrive whether the service
    keeps up or not), or, with `skip_late`, dropped (as Prometheus skips a scrape that overran)."""
    at = time.monotonic() + offset
    while at < deadline:
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        yield
        at += interval
        while skip_late and at < time.monotonic():
            at += interval


async def scrapers(port: int, deadline: float, opts: dict, tally: Tally) -> list[dict]:
    headers = load.ENDPOINTS["/metrics"]

    async def one(i: int) -> dict:
        seen = {"up": 1.0, "down": 0, "recovered": 0}

        async def read(resp: aiohttp.ClientResponse) -> bool:
            if resp.status != 200:  # a JSON error, counted by its status
                return await drain(resp)
            inflate, rest, last, up = zlib.decompressobj(wbits=31), b"", b"", None
            async for chunk in resp.content.iter_chunked(1 << 16):
                try:
                    text = rest + inflate.decompress(chunk)
                except zlib.error:
                    return False
                end = text.rfind(b"\n") + 1
                if up is None and (found := SOURCE_UP.search(text, 0, end)):
                    up = float(found.group(1))
                if end:
                    last = text[text.rfind(b"\n", 0, end - 1) + 1:end]
                rest = text[end:]
            if up is not None:
                seen["down"] += seen["up"] == 1 and up == 0
                seen["recovered"] += seen["up"] == 0 and up == 1
                seen["up"] = up
            return inflate.eof and last == b"# EOF\n" and not rest

        # Prometheus spreads its targets' scrapes over the interval; a scrape times out after
        # scrape_timeout (10 s by default), cut to the interval when that is shorter.
        interval = opts["scrape_interval"]
        timeout = min(10.0, interval)
        async with session(timeout, limit=1) as s:
            async for _ in ticks(deadline, interval, i * interval / SCRAPERS, True):
                await timed_get(s, f"http://127.0.0.1:{port}/metrics", headers, tally, read, timeout)
        return seen

    return list(await asyncio.gather(*(one(i) for i in range(SCRAPERS))))


async def recommenders(port: int, deadline: float, opts: dict, tally: Tally) -> None:
    workloads, pending, sent = opts["workloads"], set(), 0
    async with session(30.0, limit=64) as s:
        async for _ in ticks(deadline, 1 / opts["recommend_rate"]):
            url = f"http://127.0.0.1:{port}/recommend?workload={workloads[sent % len(workloads)]}"
            sent += 1
            task = asyncio.create_task(timed_get(s, url, load.ENDPOINTS["/recommend?workload=postgres"], tally))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)


async def facts_bursts(port: int, deadline: float, opts: dict, tally: Tally) -> None:
    async for _ in ticks(deadline, opts["facts_every"], opts["facts_every"] / 2):
        async with session(60.0, limit=0) as s:  # a new connection each: the service drops idle ones after 10 s
            await asyncio.gather(*(timed_get(s, f"http://127.0.0.1:{port}/v1/facts", load.ENDPOINTS["/v1/facts"], tally)
                                   for _ in range(opts["facts_burst"])))


async def health_checks(port: int, deadline: float, opts: dict, tally: Tally) -> None:
    async with session(10.0, force_close=True) as s:
        async for _ in ticks(deadline, 1.0):
            await timed_get(s, f"http://127.0.0.1:{port}/healthz", {}, tally)


async def slow_clients(port: int, deadline: float, opts: dict, tally: Tally) -> None:
    """Half-sent requests: the held time of each is its 'latency', how it ended its 'status'."""
    async def one(i: int) -> None:
        await asyncio.sleep(i * 0.1)
        while time.monotonic() < deadline:
            started = time.perf_counter()
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError as exc:
                tally.failed(type(exc).__name__)
                await asyncio.sleep(1)
                continue
            answer = asyncio.ensure_future(reader.read(200))
            try:
                writer.write(HALF_REQUEST)
                until = min(deadline, time.monotonic() + SLOW_HOLD_SECONDS)
                while not answer.done() and time.monotonic() < until:
                    await asyncio.wait([answer], timeout=2)
                    if not answer.done():
                        writer.write(b"X-Slow: 1\r\n")
                        await writer.drain()
            except OSError:  # the service closed it while a line was sent: the answer says so
                await asyncio.wait([answer], timeout=1)
            if not answer.done():
                answer.cancel()
                tally.answered(started, f"closed by the client (after {SLOW_HOLD_SECONDS:g} s or at the end)")
            elif answer.exception() is not None or not (head := answer.result()):
                tally.answered(started, "closed by the service")
            else:
                tally.answered(started, "answered " + head.split(b"\r\n", 1)[0].decode(errors="replace"))
            writer.close()

    await asyncio.gather(*(one(i) for i in range(opts["slow_clients"])))


CLIENTS = {"/metrics": scrapers, "/recommend": recommenders, "/v1/facts": facts_bursts,
           "/healthz": health_checks, "slow clients": slow_clients}


def client_process(kind: str, port: int, sync: tuple, opts: dict, counter, out) -> None:
    """In its own process: one kind of client until the deadline; what it saw into `out`."""
    ready, go, deadline = sync
    ready.release()  # imported and started: the clocks start once every kind of client is
    go.wait()
    tally = Tally(counter, KINDS.index(kind))
    started, waited = time.monotonic(), load.runqueue_seconds(os.getpid())
    extra = asyncio.run(CLIENTS[kind](port, deadline.value, opts, tally))
    # the client's own wait for a CPU is in its latencies too: not the service's doing
    client_wait = (load.runqueue_seconds(os.getpid()) - waited) / (time.monotonic() - started)
    out.put((kind, {**tally.result(), "client_wait": client_wait}, extra))


def pick(ms: list[float], q: float) -> float:
    return ms[min(len(ms) - 1, int(q * len(ms)))] if ms else 0.0


def failure_times(seconds: float, every: float, lasting: float) -> list[tuple[float, float]]:
    """When the source goes away and comes back: each cycle ends `SEE_SECONDS` before the next
    one (or the end of the run), so that its recovery can be seen."""
    every, out = min(every, seconds), []
    lasting = min(lasting, every / 3)
    start = every - lasting - SEE_SECONDS
    while start >= 0 and start + lasting + SEE_SECONDS <= seconds:
        out.append((start, start + lasting))
        start += every
    return out


def median_rss(samples: list[dict], start: float, end: float) -> float:
    inside = [s["rss_mb"] for s in samples if start <= s["t"] <= end]
    return statistics.median(inside or [min(samples, key=lambda s: abs(s["t"] - start))["rss_mb"]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--datasets", type=int, default=10000)
    parser.add_argument("--snapshot", type=Path, help="host snapshot to scale (default: newest idle lab recording)")
    parser.add_argument("--scrape-interval", type=float, default=5.0, help="seconds between a scraper's scrapes")
    parser.add_argument("--recommend-rate", type=float, default=20.0, help="/recommend requests a second")
    parser.add_argument("--facts-every", type=float, default=30.0, help="seconds between /v1/facts bursts")
    parser.add_argument("--facts-burst", type=int, default=20, help="concurrent /v1/facts requests in a burst")
    parser.add_argument("--slow-clients", type=int, default=40, help="half-sent requests held open")
    parser.add_argument("--fail-every", type=float, default=180.0, help="seconds between source failures")
    parser.add_argument("--fail-for", type=float, default=45.0, help="seconds the source stays away")
    parser.add_argument("--sample-every", type=float, default=10.0, help="seconds between RSS/descriptor samples")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    seconds = args.minutes * 60
    warmup = min(300.0, seconds / 5)  # the first 5 minutes (a fifth of a shorter run)
    window = min(60.0, seconds / 5)   # RSS is the median of the samples over this long
    row_every = 300.0 if seconds >= 1800 else max(args.sample_every, seconds / 6)
    nofile, nofile_from = unit_nofile()
    snapshot = args.snapshot or load.default_snapshot()
    failures = failure_times(seconds, args.fail_every, args.fail_for)
    print(f"snapshot: {snapshot}, scaled to {args.datasets:,} datasets\n"
          f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, Python {sys.version.split()[0]}\n"
          f"service: soft RLIMIT_NOFILE {nofile} ({nofile_from})\n"
          f"load for {args.minutes:g} min: {SCRAPERS} scrapers every {args.scrape_interval:g} s, /recommend at "
          f"{args.recommend_rate:g}/s, {args.facts_burst} x /v1/facts every {args.facts_every:g} s, "
          f"{args.slow_clients} slow clients, /healthz every 1 s, {FAILING_SOURCE} away "
          f"{len(failures)} times\n", flush=True)

    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="zfs-advisor-soak-") as tmp:
        root = scale_snapshot.scale(snapshot, Path(tmp) / "snapshot", args.datasets)
        failing = recorded_output(root, FAILING_COMMAND)
        (state := Path(tmp) / "state").mkdir()
        started_serving = time.monotonic()
        proc, port = serve_limited(root, state, nofile)
        print(f"service up in {time.monotonic() - started_serving:.0f} s (first /metrics answered)", flush=True)
        try:
            opts = {**vars(args), "workloads": workload_names(port), "json": None, "snapshot": None}
            counter, out = ctx.Array("q", len(KINDS), lock=False), ctx.Queue()
            sync = ctx.Semaphore(0), ctx.Event(), ctx.Value("d", 0.0)
            clients = [ctx.Process(target=client_process, args=(kind, port, sync, opts, counter, out))
                       for kind in KINDS]
            for c in clients:
                c.start()
            for _ in clients:
                if not sync[0].acquire(timeout=120):
                    raise SystemExit("the client processes did not start within 120 s")
            start = time.monotonic()  # CLOCK_MONOTONIC: the same clock in every process
            sync[2].value = deadline = start + seconds
            sync[1].set()
            samples = watch(proc, start, deadline, args.sample_every, counter, failing, failures)
            results = {}
            for _ in clients:  # the last requests end within their timeouts (60 s at most)
                try:
                    kind, tally, extra = out.get(timeout=120)
                except queue.Empty:
                    raise SystemExit(f"no results from the clients of {set(KINDS) - set(results)}") from None
                results[kind] = {**tally, "extra": extra}
            for c in clients:
                c.join(timeout=30)
            alive = proc.poll() is None
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        log = read_log(state / "service.log")
    return report(args, samples, results, failures, nofile, log, alive, warmup, window, row_every)


def read_log(path: Path) -> dict:
    """The service's log (JSON lines at level warning and above): lines per level, the first of
    each message, and the lines that say a descriptor limit was reached."""
    levels: Counter[str] = Counter()
    first: dict[str, str] = {}
    limit: list[str] = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
            level, message = entry["level"], entry["msg"]
        except (ValueError, KeyError, TypeError):  # a traceback or anything but the service's own lines
            level, message = "not JSON", line
        levels[level] += 1
        first.setdefault(f"{level}: {message[:160]}", line)
        if LIMIT_LOG.search(message):
            limit.append(message)
    return {"levels": dict(levels), "messages": list(first), "limit": limit}


def watch(proc, start: float, deadline: float, every: float, counter, failing: Path,
          failures: list[tuple[float, float]]) -> list[dict]:
    """Until the deadline: a sample every `every` s, and the source moved away and back on schedule."""
    away = failing.with_name(failing.name + ".away")
    events = sorted([(t, "away") for t, _ in failures] + [(t, "back") for _, t in failures])
    samples: list[dict] = []
    next_sample = start
    while (now := time.monotonic()) <= deadline + 0.5:
        if events and now - start >= events[0][0]:
            _, what = events.pop(0)
            os.rename(*((failing, away) if what == "away" else (away, failing)))
            continue
        if now >= next_sample:
            next_sample += every
            if proc.poll() is None:  # an exited service is said in the verdict
                pid = proc.pid
                samples.append({"t": now - start, "rss_mb": load.rss_mb(pid), "fds": open_fds(pid),
                                "waited_s": load.runqueue_seconds(pid), "cpu_s": cpu_seconds(pid),
                                "load": os.getloadavg()[0], "requests": sum(counter)})
        time.sleep(max(0.0, min(next_sample, start + events[0][0] if events else next_sample) - time.monotonic()))
    if away.exists():
        os.rename(away, failing)
    return samples


def report(args, samples, results, failures, nofile, log, alive, warmup, window, row_every) -> int:
    print("| minute | RSS MB | open fds | requests so far | service CPU | loop waited for a CPU | load average |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    previous = samples[0]
    print(f"| 0.0 | {previous['rss_mb']:.0f} | {previous['fds']} | {previous['requests']:,} | | | {previous['load']:.1f} |")
    for s in samples[1:]:
        if s["t"] - previous["t"] >= row_every - 1 or s is samples[-1]:
            share = {k: 100 * (s[k] - previous[k]) / (s["t"] - previous["t"]) for k in ("cpu_s", "waited_s")}
            print(f"| {s['t'] / 60:.1f} | {s['rss_mb']:.0f} | {s['fds']} | {s['requests']:,} | {share['cpu_s']:.0f} % "
                  f"| {share['waited_s']:.0f} % | {s['load']:.1f} |")
            previous = s
    print("\n| endpoint | requests | p50 ms | p99 ms | max ms | 5xx | other errors | client waited for a CPU |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    fivexx = other = 0
    for kind in KINDS[:-1]:
        r = results[kind]
        bad = sum(n for status, n in r["statuses"].items() if status.startswith("5"))
        others = {**{s: n for s, n in r["statuses"].items() if s != "200" and not s.startswith("5")}, **r["errors"]}
        fivexx, other = fivexx + bad, other + sum(others.values())
        print(f"| `{kind}` | {len(r['ms']) + sum(r['errors'].values()):,} | {pick(r['ms'], 0.5):.0f} "
              f"| {pick(r['ms'], 0.99):.0f} | {max(r['ms'], default=0):.0f} | {bad} | {others or 0} "
              f"| {100 * r['client_wait']:.0f} % |")
    slow = results["slow clients"]
    print(f"\nslow clients: {len(slow['ms']):,} half-sent requests; {slow['statuses']}; held {pick(slow['ms'], 0.5) / 1000:.1f} s "
          f"(median), {max(slow['ms'], default=0) / 1000:.1f} s at most; connection errors {slow['errors'] or 0}")
    other += sum(slow["errors"].values())
    print(f"service log: {log['levels'] or 'nothing'} (lines per level)"
          + "".join(f"\n    {m}" for m in log["messages"][:10]))

    seconds = args.minutes * 60
    after_warmup = median_rss(samples, warmup, warmup + window)
    at_end = median_rss(samples, seconds - window, seconds)
    drift = (at_end - after_warmup) / after_warmup
    healthz_p99 = pick(results["/healthz"]["ms"], 0.99)
    max_fds = max(s["fds"] for s in samples)
    seen = results["/metrics"]["extra"]
    verdict = [
        (drift < TARGETS["rss_drift"],
         f"RSS drift {100 * drift:+.1f} %: {after_warmup:.0f} MB after the warm-up ({warmup / 60:g} min) -> "
         f"{at_end:.0f} MB at the end (medians over {window:g} s), peak {max(s['rss_mb'] for s in samples):.0f} MB"),
        (healthz_p99 < TARGETS["healthz_p99_ms"], f"/healthz p99 {healthz_p99:.0f} ms"),
        (fivexx == 0, f"5xx: {fivexx}"),
        (other == 0, f"other errors: {other}"),
        (max_fds < nofile and not log["limit"],
         f"open fds at most {max_fds} of {nofile}; the service logged {len(log['limit'])} line(s) of a limit reached"
         + "".join(f"\n    {line[:200]}" for line in log["limit"][:3])),
        (all(s["down"] == s["recovered"] == len(failures) for s in seen),
         f"{FAILING_SOURCE} away and back {len(failures)} times; seen going 0 / back to 1 by each scraper: "
         + ", ".join(f"{s['down']} / {s['recovered']}" for s in seen)
         + ("" if failures else " (the run is too short for a cycle)")),
        (alive, "the service ran to the end" if alive else "the service exited during the run"),
    ]
    print()
    for ok, line in verdict:
        print(f"{'met' if ok else 'MISSED'}: {line}")
    if args.json:
        summary = {k: {**{q: pick(r["ms"], v) for q, v in (("p50_ms", 0.5), ("p99_ms", 0.99), ("max_ms", 1.0))},
                       "answers": len(r["ms"]), "statuses": r["statuses"], "errors": r["errors"],
                       "client_wait": r["client_wait"]}
                   for k, r in results.items()}
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "samples": samples,
                                         "endpoints": summary, "source_cycles": len(failures), "seen": seen, "log": log,
                                         "verdict": [{"met": ok, "line": line} for ok, line in verdict]}, indent=1))
    return 0 if all(ok for ok, _ in verdict) else 1


if __name__ == "__main__":
    sys.exit(main())
