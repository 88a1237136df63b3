#!/usr/bin/env python3
"""What the daemon's recognition says about an application run of `tests/lab/app-grid --objsets DIR`:
each recorded run's objset samples cut into windows of --seconds on the run's own dataset, each
classified as the daemon does (advisor/recognise/), with what it observed.

    tests/lab/experiments/app-recognition.py [--seconds 30] DIR
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from advisor.engine.loader import load_rulebook  # noqa: E402 - after the sys.path line above
from advisor.recognise.classify import classify  # noqa: E402 - after the sys.path line above
from advisor.recognise.recorded import read_job, windows  # noqa: E402 - after the sys.path line above
from advisor.recognise.signature import signatures  # noqa: E402 - after the sys.path line above


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("directory", type=Path)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    sigs = signatures(load_rulebook().workloads)
    for run in sorted(p for p in args.directory.iterdir() if p.is_dir()):
        samples = read_job(run / "objsets")
        # the run's own dataset, as app-grid wrote it; in older recordings the one that did the most
        # reads and writes (which can be another: the source of a copy)
        names = set(samples[0].datasets) & set(samples[-1].datasets) if samples else set()
        told = run / "dataset"
        busiest = told.read_text().strip() if told.exists() else max(
            names, key=lambda n: sum(samples[-1].datasets[n][:2]) - sum(samples[0].datasets[n][:2]),
            default=None)  # Counters: reads, writes, ...
        if busiest is None:
            print(f"{run.name}: no samples")
            continue
        found = [classify(t, sigs) for t in windows(samples, busiest, args.seconds)]
        seen = Counter(f"{r.workload}/{r.role}" if r.known else r.workload for r in found)
        print(f"{run.name} ({busiest}, {len(found)} windows of {args.seconds:g} s): "
              + ", ".join(f"{k} {v}" for k, v in seen.most_common()))
        for r in found:
            print("   ", json.dumps(r.shown()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
