#!/usr/bin/env python3
"""Hostile clients against a legitimate one (a benchmark: prints a table, asserts nothing).

    tests/bench/hostile.py [--root SNAPSHOT] [--datasets N] [--readers 2000] [--bodies 1000]
                           [--handshakes 1500] [--hold 20] [--nofile 4096] [--only NAME]

For each kind of hostile client, a fresh `zfs-advisor serve --root SNAPSHOT` (the recorded
2.3.2 ssd-mirror2x2 host, or that host scaled to --datasets by tests/bench/scale_snapshot.py)
runs with the file limit the systemd unit sets (LimitNOFILE=4096) and an api_token; the hostile
clients open their connections one after the other, each sends its bytes and then nothing, and
they hold them for --hold seconds, while a legitimate client asks GET /healthz on a new
connection every 50 ms (5 s timeout) and the service's resident memory is sampled every 100 ms:

  slow readers           GET /metrics (identity encoding), 4 KiB receive buffer, each waiting
                         for its 200 to begin before the next connects, then never reading
  slow bodies, token     POST /v1/probes with the token, 1 byte of a 1,000-byte body
  slow bodies, no token  the same without the token
  half TLS handshakes    against the service with TLS (a web config file): the first 11 bytes
                         of a ClientHello

Columns: polls of /healthz and the share answered 200, their p50 / p99 / max (a failed poll
counts as 5 s), how many more descriptors the service had open at the end of the hold than before (its
hostile connections that it has not closed), and the
service's resident memory before the attack and at its peak, against the unit's MemoryMax.
"""
from __future__ import annotations

import argparse
import os
import resource
import ssl
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_snapshot  # noqa: E402 - after the sys.path lines above

from support.hostile import ATTACKS, Attack, HealthPoller, RssSampler, hold, open_files  # noqa: E402 - after the sys.path lines above
from support.service import Service  # noqa: E402 - after the sys.path lines above
from support.tls import make_certs  # noqa: E402 - after the sys.path lines above

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO / "tests" / "fixtures" / "hosts" / "2.3.2" / "ssd-mirror2x2" / "idle"
TOKEN = "hostile-bench-token-0123456789abcdef"
MEMORY_MAX_MB = 768  # deploy/systemd/zfs-advisor.service


def run(attack: Attack, count: int, root: Path, work: Path, hold_seconds: float, nofile: int) -> dict:
    args: list[str] = []
    tls = None
    if attack.tls:
        certs = make_certs(work)
        config = work / "web.yml"
        config.write_text(f"tls_server_config:\n  cert_file: {certs.server_cert}\n  key_file: {certs.server_key}\n")
        args = ["--web.config.file", str(config)]
        tls = ssl.create_default_context(cafile=str(certs.ca))
    env = {"ZFS_ADVISOR_LOG_LEVEL": "warning", "ZFS_ADVISOR_API_TOKEN": TOKEN,
           "ZFS_ADVISOR_STATE_DIR": str(work / "state")}
    with Service(root, work, *args, env=env, nofile=nofile) as service:
        scheme = "https" if tls else "http"
        urllib.request.urlopen(f"{scheme}://127.0.0.1:{service.port}/metrics", timeout=120, context=tls).read()
        sampler = RssSampler(service.proc.pid)
        before, files_before = sampler.rss_kb() / 1024, open_files(service.proc.pid)
        with HealthPoller(service.port, tls=tls) as poller, sampler:
            time.sleep(1)
            held = hold(service.port, count, attack.payload(TOKEN), until_answered=attack.until_answered)
            time.sleep(hold_seconds)
            open_at_end = open_files(service.proc.pid) - files_before
        for sock in held:
            sock.close()
    return {"attack": attack.name, "clients": count, "connected": len(held), "open": open_at_end,
            "polls": poller.polls, "answered": poller.answered_share(), "p50": poller.quantile(0.5),
            "p99": poller.quantile(0.99), "max": max(poller.times + [5.0] * bool(poller.failures)),
            "rss_before": before, "rss_peak": sampler.peak_mb, "failures": sorted(set(poller.failures))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--datasets", type=int, default=0, help="scale the snapshot to this many datasets first")
    parser.add_argument("--readers", type=int, default=2000)
    parser.add_argument("--bodies", type=int, default=1000)
    parser.add_argument("--handshakes", type=int, default=1500)
    parser.add_argument("--hold", type=float, default=20.0)
    parser.add_argument("--nofile", type=int, default=4096)
    parser.add_argument("--only", choices=sorted(ATTACKS), action="append")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))  # this process holds them
    counts = {"slow readers": args.readers, "slow bodies, token": args.bodies, "slow bodies, no token": args.bodies,
              "half TLS handshakes": args.handshakes}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root
        if args.datasets:
            root = scale_snapshot.scale(args.root, Path(tmp) / "scaled", args.datasets)
        for name in args.only or list(ATTACKS):
            work = Path(tmp) / name.replace(" ", "-").replace(",", "")
            work.mkdir()
            rows.append(run(ATTACKS[name], counts[name], root, work, args.hold, args.nofile))
            print(f"  {name}: done", file=sys.stderr)
    print(f"snapshot {args.root.relative_to(REPO) if args.root.is_relative_to(REPO) else args.root}"
          f"{f' scaled to {args.datasets} datasets' if args.datasets else ''}; LimitNOFILE {args.nofile}; "
          f"hold {args.hold:g} s; {os.cpu_count()} cores; MemoryMax {MEMORY_MAX_MB} MB")
    print(f"| {'attack':<22} | clients | connected | fds at end | /healthz polls | answered | p50 ms | p99 ms "
          f"| max ms | RSS before -> peak MB |")
    print("|" + "|".join("-" * n for n in (24, 9, 11, 12, 16, 10, 8, 8, 8, 23)) + "|")
    for r in rows:
        print(f"| {r['attack']:<22} | {r['clients']:>7} | {r['connected']:>9} | {r['open']:>10} | {r['polls']:>14} "
              f"| {r['answered'] * 100:>7.1f} % | {r['p50'] * 1000:>6.0f} | {r['p99'] * 1000:>6.0f} "
              f"| {r['max'] * 1000:>6.0f} | {r['rss_before']:>8.0f} -> {r['rss_peak']:>6.0f}{'':>5} |")
        if r["failures"]:
            print(f"|   failed polls: {', '.join(r['failures'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
