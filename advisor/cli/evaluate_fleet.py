"""`zfs-advisor evaluate --fleet`: what two sibling pools' probes add to an answer at 0 local
probes, on the lab prior (advisor/model/fleet_evaluation.py, docs/fleet.md)."""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fleet", action="store_true",
                   help="each cell answered at 0 local probes with two sibling pools' probes (the cell's runs, or "
                        "its repeats, each probed as its own profiler would): the shipped fit with --shipped-fit, "
                        "else a refit of the first model of --models per cell; the last line sums it up")
    p.add_argument("--between", metavar="V[,V...]",
                   help="--fleet: the between-host variance of a sibling's probes (log-ratio units) instead of the "
                        "shipped BETWEEN_HOST_VARIANCE (one table each)")


def run_fleet(args: argparse.Namespace,
              held_out_setup: Callable[[argparse.Namespace, str], tuple[list, Callable[[], Any]] | int]) -> int:
    """`held_out_setup`: the prior and the factory of the model without each cell (cli/evaluate.py)."""
    from advisor.model import fleet_evaluation
    from advisor.model.siblings import BETWEEN_HOST_VARIANCE

    try:
        betweens = ([BETWEEN_HOST_VARIANCE] if args.between is None
                    else [float(v) for v in args.between.split(",") if v.strip()])
    except ValueError:
        betweens = []
    if not betweens or any(not math.isfinite(b) or b < 0 for b in betweens):
        print(f"zfs-advisor evaluate: --between takes finite variances >= 0, e.g. 0.01,0.019; not {args.between!r}",
              file=sys.stderr)
        return 2
    setup = held_out_setup(args, "--fleet")
    if isinstance(setup, int):
        return setup
    prior, factory = setup
    cache: dict = {}  # one fit per held-out cell, shared by the variances
    report = []
    for between in betweens:
        results = fleet_evaluation.evaluate_fleet(factory, prior, args.cells, cache, between)
        report.append({"between": between, "cells": [asdict(r) for r in results]})
        if not args.json:
            print(f"\nbetween-host variance {between:g}, {len(prior)} lab rows, {len(results)} cells held out in turn:")
            print(fleet_evaluation.table(results))
            print(fleet_evaluation.summary_line(results))
    if args.json:
        print(json.dumps(report, indent=2))
    return 0
