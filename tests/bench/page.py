#!/usr/bin/env python3
"""The page's size and time to render on a big host (not a timed test: prints a table).

    tests/bench/page.py [--snapshot DIR] [--datasets 10,1000,10000] [--workloads 0,20] [--repeats 5]

For each dataset count, a lab recording scaled to that many datasets (scale_snapshot.py), with
`--workloads` of them named in the `workloads` setting (postgres: the pool page then shows
each one's open advice from the rule book) and one stored probe run (tests/support/probes.py).
Columns, per page (/, /pool/<pool>, /probes/1):
- "render s": building the page in this process, median of `--repeats` (advisor.page: the rule
  book's answers, the store's reads and the HTML; the regression model off, its lookups are
  /recommend's cost and need its fit);
- "served first s": the real service (`python -m advisor serve --root DIR`, on 127.0.0.1, the
  model on as shipped) answering the page's first request after its collection, everything
  included; "served again s": a second request within facts_max_age_seconds, which gets the
  page built for the first (the pages are shared per collection, like /recommend's answers);
- "bytes": the page's size as the service sent it (HTML, not compressed).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # noqa: E402 - after the sys.path line above
import scale_snapshot  # noqa: E402 - after the sys.path line above

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
from advisor.engine.loader import load_rulebook  # noqa: E402 - after the sys.path line above
from advisor.host.snapshot import collect_from_root  # noqa: E402 - after the sys.path line above
from advisor.page import build, gather  # noqa: E402 - after the sys.path line above
from support.probes import seed_recordsize_probe  # noqa: E402 - after the sys.path line above


def render(inputs: gather.Inputs, path: str) -> str:
    """The page at `path`, as advisor/api/page.py builds it (without the app around it)."""
    if path == "/":
        return build.overview(inputs)
    if path.startswith("/pool/"):
        return build.pool(inputs, path.removeprefix("/pool/"))
    return build.probe_run(inputs, int(path.rsplit("/", 1)[1]))


def fetch(port: int, path: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=300) as resp:
        size = len(resp.read())
        assert resp.status == 200, (path, resp.status)
    return time.perf_counter() - started, size


def measure(root: Path, state: Path, workloads: dict[str, str], repeats: int) -> list[dict]:
    host = asyncio.run(collect_from_root(root)).host
    paths = ["/", f"/pool/{host.pools[0].name}", "/probes/1"]
    inputs = gather.Inputs(host=host, book=load_rulebook(), workloads=workloads, state_dir=state)
    rows = []
    for path in paths:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            text = render(inputs, path)
            times.append(time.perf_counter() - started)
        assert "</html>" in text
        rows.append({"path": path, "render": statistics.median(times)})
    env = {"ZFS_ADVISOR_WORKLOADS": json.dumps(workloads), "ZFS_ADVISOR_COMMANDS_INTERVAL_SECONDS": "3600"}
    proc, port = load.serve(root, state, env)
    try:
        for row in rows:
            row["first"], row["bytes"] = fetch(port, row["path"])  # the model's advice included
            row["again"], _ = fetch(port, row["path"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshot", type=Path, help="host snapshot to scale (default: newest idle lab recording)")
    parser.add_argument("--datasets", default="10,1000", help="comma-separated dataset counts")
    parser.add_argument("--workloads", default="0,20", help="comma-separated counts of datasets given a workload")
    parser.add_argument("--repeats", type=int, default=5, help="in-process renders per page (the median is shown)")
    args = parser.parse_args(argv)
    snapshot = args.snapshot or load.default_snapshot()
    print(f"snapshot: {snapshot}\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}\n")
    print("| datasets | with a workload | page | bytes | render s | served first s | served again s |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="zfs-advisor-bench-page-") as tmp:
        for n in (int(x) for x in args.datasets.split(",")):
            root = scale_snapshot.scale(snapshot, Path(tmp) / f"n{n}", n)
            scaled = sorted(d.name for d in asyncio.run(collect_from_root(root)).host.datasets if "/scale/" in d.name)
            for w in (int(x) for x in args.workloads.split(",")):
                state = Path(tmp) / f"state-{n}-{w}"
                state.mkdir()
                seed_recordsize_probe(state)
                workloads = {name: "postgres" for name in scaled[:w]}
                for row in measure(root, state, workloads, args.repeats):
                    print(f"| {n:,} | {len(workloads)} | {row['path']} | {row['bytes']:,} | {row['render']:.3f} "
                          f"| {row['first']:.3f} | {row['again']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
