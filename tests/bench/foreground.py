#!/usr/bin/env python3
"""What the probe's foreground watch costs on a big host (not a timed test: prints a table).

    tests/bench/foreground.py [--datasets 10,1000,10000] [--polls 50]
    tests/bench/foreground.py --live POOL     # this host's pool, its real kstats


Replays the lab recording of OpenZFS 2.3.2 on ssd-mirror2x2 scaled to N datasets
(scale_snapshot.py: N more objset kstat files). Columns:
- "all, kstat parser": reading every objset kstat through advisor.host.pool_kstats
  (what the watch did at each 0.2 s poll before it read in rounds);
- "refresh": the watch reading every objset once (the start of each fio run, the idle check);
- "poll p50 / max": one poll with the shipped budget (50 ms of reading);
- "polls a round", "round": how many polls, and how long at one poll every 0.2 s, before
  every dataset has been read again: foreground I/O on the last one shows after that long.
Files here are on the replay's file system, not procfs: a live kstat read costs more (the
kernel formats it), so the live round is longer; docs/probes.md gives a lab measurement.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_snapshot  # noqa: E402 - after the sys.path line above

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from advisor.host.files import HostFiles  # noqa: E402 - after the sys.path line above
from advisor.host.pool_kstats import read_objsets  # noqa: E402 - after the sys.path line above
from advisor.probe.foreground import ForegroundWatch  # noqa: E402 - after the sys.path line above

SNAPSHOT = REPO / "tests" / "fixtures" / "hosts" / "2.3.2" / "ssd-mirror2x2" / "idle"
POLL_SECONDS = 0.2


def _ms(fn, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def measure(root: Path, polls: int, pool: str = "tank") -> dict[str, float]:
    files = HostFiles(root)
    watch = ForegroundWatch(files, pool, f"{pool}/zfs-advisor-probe")
    before = statistics.median(_ms(lambda: read_objsets(files, pool), 3))
    refresh = statistics.median(_ms(watch.refresh, 3))
    watch.refresh()
    rounds_before = []
    poll_times = []
    for _ in range(polls):
        start = time.perf_counter()
        watch.poll()
        poll_times.append((time.perf_counter() - start) * 1000)
        rounds_before.append(watch._next)  # position in the round after this poll
    per_round = _polls_per_round(rounds_before)
    return {"before": before, "refresh": refresh, "p50": statistics.median(poll_times),
            "max": max(poll_times), "polls": per_round, "round": per_round * POLL_SECONDS,
            "datasets": watch.poll().datasets}


def _polls_per_round(positions: list[int]) -> float:
    """Polls between two wraps of the round (a wrap: the position goes back)."""
    wraps = [i for i in range(1, len(positions)) if positions[i] <= positions[i - 1]]
    if len(wraps) < 2:
        return 1.0 if all(p == 0 for p in positions) else float(len(positions))
    return (wraps[-1] - wraps[0]) / (len(wraps) - 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="10,1000,10000")
    parser.add_argument("--polls", type=int, default=50)
    parser.add_argument("--live", metavar="POOL", help="measure this host's pool instead of replays")
    args = parser.parse_args(argv)
    print("| datasets | all, kstat parser (ms) | refresh (ms) | poll p50 / max (ms) | polls a round | round (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    if args.live:
        r = measure(Path("/"), args.polls, args.live)
        if not r["datasets"]:
            raise SystemExit(f"no objset kstats under /proc/spl/kstat/zfs/{args.live}")
        _row(f"{r['datasets']:,} (live)", r)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in args.datasets.split(",")]:
            root = Path(tmp) / f"n{n}"
            scale_snapshot.scale(SNAPSHOT, root, n)
            _row(f"{n:,}", measure(root, args.polls))
    return 0


def _row(datasets: str, r: dict[str, float]) -> None:
    print(f"| {datasets} | {r['before']:.1f} | {r['refresh']:.1f} | {r['p50']:.1f} / {r['max']:.1f} "
          f"| {r['polls']:.1f} | {r['round']:.1f} |", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
