#!/usr/bin/env python3
"""The change tracker's cost on a big host (not a timed test: prints one line per dataset count).

    tests/bench/changes.py [--datasets 1000,10000] [--collections 90]

A lab recording scaled to that many datasets (scale_snapshot.py), observed `--collections` times
15 s apart with every dataset's objset counters moving on every collection (the worst case: an
idle dataset costs one ring entry) and its properties as recorded. Prints the median and longest
`observe` (what the service runs in a worker thread after each command refresh) and the bytes the
ring of dataset counters holds at the default 600 s window.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_snapshot  # noqa: E402 - after the sys.path line above

from advisor.changes.detect import tracked  # noqa: E402 - after the sys.path line above
from advisor.changes.tracker import ChangeTracker  # noqa: E402 - after the sys.path line above
from advisor.engine.loader import load_rulebook  # noqa: E402 - after the sys.path line above
from advisor.host.snapshot import collect_from_root  # noqa: E402 - after the sys.path line above
from advisor.hostmodel.facts import KStat  # noqa: E402 - after the sys.path line above
from support import HOSTS  # noqa: E402 - after the sys.path line above

RECORDING = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"


def measure(datasets: int, collections: int) -> str:
    root = scale_snapshot.scale(RECORDING, Path(tempfile.mkdtemp()) / "scaled", datasets)
    host = asyncio.run(collect_from_root(root)).host
    tracker = ChangeTracker(tracked(load_rulebook()), None, 600)
    start, took = datetime(2026, 11, 28, tzinfo=UTC), []
    for i in range(collections):
        h = host.model_copy()
        h.collected_at = start + timedelta(seconds=15 * i)
        h.datasets = [d.model_copy(update={"io": KStat(values={"reads": i, "writes": 3 * i, "nread": 4096 * i,
                                                                 "nwritten": 8192 * i})}) for d in host.datasets]
        began = time.perf_counter()
        tracker.observe(h)
        took.append(time.perf_counter() - began)
    ring = sum(len(s.data) * s.data.itemsize for s in tracker.samples.datasets.values())
    return (f"{len(host.datasets):>6} datasets: observe median {statistics.median(took) * 1000:.0f} ms, longest "
            f"{max(took) * 1000:.0f} ms; ring {len(tracker.samples.times)} samples, {ring / 2**20:.1f} MiB of counters")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="1000,10000")
    ap.add_argument("--collections", type=int, default=90)
    args = ap.parse_args()
    for n in (int(x) for x in args.datasets.split(",")):
        print(measure(n, args.collections), flush=True)


if __name__ == "__main__":
    main()
