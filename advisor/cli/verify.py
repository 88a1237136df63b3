"""`zfs-advisor verify`: one tuned-adm-style line per check, passed / failed (expected X) / skipped.

Exit codes: 0 nothing failed, 1 a check failed, 2 bad usage (as `recommend`).
"""
from __future__ import annotations

import argparse
import json
import sys

from advisor.cli.common import add_printing_subcommand
from advisor.cli.recommend import add_target_arguments, compute
from advisor.engine.text import verify_lines


def register(sub: argparse._SubParsersAction) -> None:
    p = add_target_arguments(
        add_printing_subcommand(sub, "verify", "check the current settings against a workload: passed / failed / skipped")
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    response = compute(args)
    if response is None:
        return 2
    if args.json:
        checks = [{"parameter": r.parameter, "status": r.status, "current": r.current, "expected": r.requirement,
                   "pool": r.pool, "dataset": r.dataset, "rule": r.rule} for r in response.recommendations]
        sys.stdout.write(json.dumps({"workload": response.workload, "checks": checks}, indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(verify_lines(response)) + "\n")
        s = response.summary
        undecided = f", {s.undecided} undecided" if s.undecided else ""
        sys.stdout.write(f"verify: {s.passed} passed, {s.change} failed{undecided}, {s.skipped} skipped\n")
    return 1 if response.summary.change else 0
