#!/usr/bin/env python3
"""What the daemon's recognition says about an application run of `tests/lab/app-grid --objsets DIR`:
each recorded run's objset samples cut into windows of --seconds on the run's own dataset, each
classified as the daemon does (advisor/recognise/), with what it observed.

    tests/lab/experiments/app-recognition.py [--seconds 30] DIR
    tests/lab/experiments/app-recognition.py --table [--seconds 10] tests/lab/apps-data/objsets
        # every grid's runs, one row per application: the confusion table of docs/recognition.md
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
from advisor.recognise.classify import UNKNOWN, classify  # noqa: E402 - after the sys.path line above
from advisor.recognise.recorded import read_job, windows  # noqa: E402 - after the sys.path line above
from advisor.recognise.signature import signatures  # noqa: E402 - after the sys.path line above


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("directory", type=Path)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--table", action="store_true", help="DIR holds grids of runs: one row per application")
    args = ap.parse_args()
    sigs = signatures(load_rulebook().workloads)
    if args.table:
        return table(args.directory, args.seconds, sigs)
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


EXPECTED = {"pgbench-tpcb": "postgres/data", "pgbench-select": "postgres/data", "fio-postgres": "postgres/data",
            "mariadb-oltp": "mysql/data", "fio-mysql": "mysql/data", "copy": "no database", "borg": "no database"}
DATABASES = ("postgres/", "mysql/", "sqlite/")


def table(directory: Path, seconds: float, sigs: list) -> int:
    by_app: dict[str, Counter] = {}
    runs: Counter = Counter()
    for grid in sorted(p for p in directory.iterdir() if p.is_dir()):
        for run in sorted(p for p in grid.iterdir() if p.is_dir()):
            app = next((a for a in EXPECTED if run.name.startswith(a + "-")), run.name)
            dataset = (run / "dataset").read_text().strip()
            found = [classify(t, sigs) for t in windows(read_job(run / "objsets"), dataset, seconds)]
            by_app.setdefault(app, Counter()).update(f"{r.workload}/{r.role}" if r.known else UNKNOWN for r in found)
            runs[app] += 1
    print(f"| application | runs | windows of {seconds:g} s | expected | as expected | recognised as |")
    print("| --- | --- | --- | --- | --- | --- |")
    for app, got in by_app.items():
        want = EXPECTED.get(app, "?")
        ok = (sum(v for k, v in got.items() if not k.startswith(DATABASES)) if want == "no database" else got[want])
        print(f"| {app} | {runs[app]} | {sum(got.values())} | {want} | {ok} | "
              + ", ".join(f"{k} {v}" for k, v in got.most_common()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
