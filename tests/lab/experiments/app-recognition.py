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
        # the run's own datasets, as app-grid wrote them (the data's, then the WAL's where it has its
        # own); in older recordings the one that did the most reads and writes (which can be another:
        # the source of a copy)
        names = set(samples[0].datasets) & set(samples[-1].datasets) if samples else set()
        told = run / "dataset"
        busiest = told.read_text().split() if told.exists() else [max(
            names, key=lambda n: sum(samples[-1].datasets[n][:2]) - sum(samples[0].datasets[n][:2]),
            default=None)]  # Counters: reads, writes, ...
        if None in busiest:
            print(f"{run.name}: no samples")
            continue
        for dataset in busiest:
            found = [classify(t, sigs) for t in windows(samples, dataset, args.seconds)]
            seen = Counter(f"{r.workload}/{r.role}" if r.known else r.workload for r in found)
            print(f"{run.name} ({dataset}, {len(found)} windows of {args.seconds:g} s): "
                  + ", ".join(f"{k} {v}" for k, v in seen.most_common()))
            for r in found:
                print("   ", json.dumps(r.shown()))
    return 0


EXPECTED = {"pgbench-tpcb": "postgres/data", "pgbench-select": "postgres/data", "fio-postgres": "postgres/data",
            "mariadb-oltp": "mysql/data", "fio-mysql": "mysql/data", "copy": "no database", "borg": "no database",
            "media-read": "media/data"}
WAL_EXPECTED = "postgres/wal"  # a run's second dataset: PostgreSQL's WAL on its own (app-grid --pg-wal separate)
DATABASES = ("postgres/", "mysql/", "sqlite/")


def table(directory: Path, seconds: float, sigs: list) -> int:
    by_app: dict[str, Counter] = {}
    expected: dict[str, str] = {}
    runs: Counter = Counter()
    for grid in sorted(p for p in directory.iterdir() if p.is_dir()):
        for run in sorted(p for p in grid.iterdir() if p.is_dir()):
            app = next((a for a in EXPECTED if run.name.startswith(a + "-")), run.name)
            samples = read_job(run / "objsets")
            # one row per dataset of the run: the data's is the application's, a second its WAL's
            for i, dataset in enumerate((run / "dataset").read_text().split()):
                row = app if i == 0 else f"{app}, WAL"
                expected[row] = EXPECTED.get(app, "?") if i == 0 else WAL_EXPECTED
                found = [classify(t, sigs) for t in windows(samples, dataset, seconds)]
                by_app.setdefault(row, Counter()).update(f"{r.workload}/{r.role}" if r.known else UNKNOWN for r in found)
                runs[row] += 1
    print(f"| application | runs | windows of {seconds:g} s | expected | as expected | recognised as |")
    print("| --- | --- | --- | --- | --- | --- |")
    for app, got in by_app.items():
        want = expected[app]
        ok = (sum(v for k, v in got.items() if not k.startswith(DATABASES)) if want == "no database" else got[want])
        print(f"| {app} | {runs[app]} | {sum(got.values())} | {want} | {ok} | "
              + ", ".join(f"{k} {v}" for k, v in got.most_common()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
