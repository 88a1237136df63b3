#!/usr/bin/env python3
"""The first /recommend after start-up, at several dataset counts.

    tests/bench/cold_recommend.py [--snapshot DIR] [--datasets 6,10000] [--runs 3]

For each dataset count, a lab recording scaled to that many datasets (scale_snapshot.py; 6 is
the recording as it is) is served as the CLI serves a replay (`python -m advisor serve --root
DIR`, an empty state directory), and one client asks /recommend?workload=postgres from the
moment the process starts until it is answered (a refused connection is asked again 20 ms
later). Prints the time from the start to the answer (which includes Python's start-up and the
imports), and the service's CPU time (user + system) by then: on a shared machine the CPU time
is the figure that is the service's own. Exits 1 when the median misses the target
(docs/reliability.md): 1 s at up to 10 datasets, 3 s at 10,000.
"""
from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_snapshot  # noqa: E402 - after the sys.path line above
from load import cpu_seconds, default_snapshot, free_port  # noqa: E402 - after the sys.path line above

REPO = Path(__file__).resolve().parents[2]
TARGET_SECONDS = {10: 1.0, 10_000: 3.0}  # at most this many datasets: this many seconds


def first_answer(root: Path, state: Path) -> tuple[float, float]:
    """(seconds from the start to the first 200, the service's CPU seconds by then)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "ZFS_ADVISOR_STATE_DIR": str(state), "ZFS_ADVISOR_LOG_LEVEL": "warning"}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--root", str(root), "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        while time.perf_counter() - started < 120:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("GET", "/recommend?workload=postgres")
                status = conn.getresponse().status
                conn.close()
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit("the service exited") from None
                time.sleep(0.02)
                continue
            if status != 200:
                raise SystemExit(f"/recommend answered {status}")
            return time.perf_counter() - started, cpu_seconds(proc.pid)
        raise SystemExit("no answer within 120 s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshot", type=Path, help="host snapshot to scale (default: newest idle lab recording)")
    parser.add_argument("--datasets", default="6,10000", help="comma-separated dataset counts (6: as recorded)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    snapshot = args.snapshot or default_snapshot()
    print(f"snapshot: {snapshot}\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}\n")
    print("| datasets | first /recommend s (median, max) | service CPU s by then (median) | target s |")
    print("|---:|---:|---:|---:|")
    missed = []
    with tempfile.TemporaryDirectory(prefix="zfs-advisor-cold-") as tmp:
        for n in (int(x) for x in args.datasets.split(",")):
            root = snapshot if n <= 6 else scale_snapshot.scale(snapshot, Path(tmp) / f"n{n}", n)
            runs = []
            for i in range(args.runs):
                (state := Path(tmp) / f"state{n}-{i}").mkdir()
                runs.append(first_answer(root, state))
            wall = statistics.median(r[0] for r in runs)
            target = next((t for limit, t in sorted(TARGET_SECONDS.items()) if n <= limit), None)
            print(f"| {n:,} | {wall:.2f} ({max(r[0] for r in runs):.2f}) | {statistics.median(r[1] for r in runs):.2f} "
                  f"| {target if target is not None else '-'} |", flush=True)
            if target is not None and wall > target:
                missed.append(f"{n} datasets: the first /recommend took {wall:.2f} s (target {target} s)")
    for line in missed:
        print(f"MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
