#!/usr/bin/env python3
"""The two ends of the pool disks' busy share over application runs, as the daemon reads them
(advisor/evidence/application_bound.py): io_ticks (the lower end) and the summed I/O time, field 11
of /proc/diskstats (the upper end, printed here before its cap at 1), beside each disk's completed
operations a second, and the daemon's verdict on the busiest disk.

    tests/lab/experiments/busy-ends.py [--disks sda,sdb,sdc,sdd] RUN.txt... | DIR...

A RUN.txt is one run of tests/lab/app-grid (two guest readings split by @@SPLIT); a DIR holds
before.txt and after.txt (tests/fixtures/apps/*).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "lab"))

from advisor.evidence.application_bound import pool_busy  # noqa: E402 - after the sys.path lines above
from appevidence import Reading, parse_reading  # noqa: E402 - after the sys.path lines above


def readings(path: Path) -> tuple[Reading, Reading]:
    if path.is_dir():
        return parse_reading((path / "before.txt").read_text()), parse_reading((path / "after.txt").read_text())
    before, after = path.read_text().split("@@SPLIT", 1)
    return parse_reading(before), parse_reading(after)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--disks", default="sda,sdb,sdc,sdd", help="the pool's member disks")
    args = ap.parse_args()
    print("run,seconds,disk,ops_per_second,io_ticks_share,in_flight_share")
    for path in args.runs:
        before, after = readings(path)
        seconds = after.clock - before.clock
        ticks, in_flight = {}, {}
        for disk in args.disks.split(","):
            a, b = before.disks[disk], after.disks[disk]
            ops = (b.reads_completed - a.reads_completed + b.writes_completed - a.writes_completed) / seconds
            ticks[disk] = (b.io_seconds - a.io_seconds) / seconds
            in_flight[disk] = (b.weighted_io_seconds - a.weighted_io_seconds) / seconds
            print(f"{path.name},{seconds:.1f},{disk},{ops:.1f},{ticks[disk]:.2f},{in_flight[disk]:.2f}")
        busy = pool_busy("pool", ticks, in_flight, seconds)
        print(f"# {path.name}: {busy.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
