"""`zfs-advisor evaluate`: the regression model against the lab prior, offline (docs/model.md).

Leave one cell (layout × workload) out, let the advisor probe it by expected improvement within
`--budget` candidates and pick; print its pick against the measured best of the whole grid and
against the ZFS default, and how often the 90 % intervals cover the held-out measurements.

Exit codes: 0 done, 1 the model cannot run here (no scikit-learn, no prior rows), 2 bad usage.
"""
from __future__ import annotations

import argparse
import json
import sys

from advisor.model import sklearn_missing
from advisor.model.dataset import load_csv, prior_path, samples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="the regression model against the lab prior (leave one cell out)")
    p.add_argument("--prior", metavar="CSV", help=f"prior data (default: the shipped {prior_path().name})")
    p.add_argument("--budget", default="1,2", metavar="N[,N...]",
                   help="candidates probed per held-out cell, the baseline included (default 1,2)")
    p.add_argument("--models", default="gp,quantile-gb", metavar="NAME[,NAME...]",
                   help="models to compare: gp, quantile-gb (default both)")
    p.add_argument("--seed", type=int, default=0, help="random_state of the models (default 0)")
    p.add_argument("--json", action="store_true", help="the per-cell results and summaries as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    missing = sklearn_missing()
    if missing:
        print(f"zfs-advisor evaluate: {missing}", file=sys.stderr)
        return 1
    from advisor.model.evaluation import evaluate, summary, table
    from advisor.model.regress import MODELS

    try:
        budgets = [int(b) for b in args.budget.split(",") if b.strip()]
    except ValueError:
        print(f"zfs-advisor evaluate: --budget {args.budget!r}: expected numbers like 1,2", file=sys.stderr)
        return 2
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODELS]
    if unknown or not budgets or min(budgets) < 1:
        print(f"zfs-advisor evaluate: models must be among {sorted(MODELS)} and budgets >= 1", file=sys.stderr)
        return 2
    prior = samples(load_csv(args.prior))
    cells = sorted({s.obs.cell for s in prior})
    if len(cells) < 2:
        print(f"zfs-advisor evaluate: {len(cells)} cell(s) in the prior: leaving one out needs at least two",
              file=sys.stderr)
        return 1
    report = []
    for name in names:
        for budget in budgets:
            results = evaluate(lambda: MODELS[name](seed=args.seed), prior, budget)
            report.append({"model": name, "budget": budget, "summary": summary(results),
                           "cells": [r.__dict__ for r in results]})
            if not args.json:
                print(f"\n{name}, budget {budget} probe(s) per cell, {len(prior)} lab rows in {len(cells)} cells:")
                print(table(results))
    if args.json:
        print(json.dumps(report, indent=2))
    return 0
