"""`zfs-advisor recommend` and `zfs-advisor verify` (registered by advisor.cli).

Both compute exactly what GET /recommend computes; `recommend` prints the
text (or, with --json, the same JSON), `verify` prints one tuned-adm-style
line per check and exits 1 when any check failed.

Exit codes: 0 success (verify: nothing failed), 1 verify found failures,
2 bad usage (unknown workload, pool, dataset or parameter; broken rules).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Callable

from advisor.engine.loader import load_rulebook
from advisor.engine.models import RecommendResponse
from advisor.engine.service import TargetError, recommend
from advisor.engine.text import recommend_text, verify_lines


def _param(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def register(sub: argparse._SubParsersAction, common: Callable[[argparse.ArgumentParser], None]) -> None:
    for name, func, help_text in (
        ("recommend", cmd_recommend, "what to set for a workload, why, and the commands"),
        ("verify", cmd_verify, "check the current settings against a workload: passed / failed / skipped"),
    ):
        p = sub.add_parser(name, help=help_text)
        common(p)
        p.add_argument("--workload", required=True, help="workload profile, e.g. postgres (an unknown name lists the valid ones)")
        p.add_argument("--pool", help="pool to advise on (default: every pool)")
        p.add_argument("--dataset", help="dataset to advise on (default: a new <pool>/<workload> dataset)")
        p.add_argument("--role", help="which of the workload's datasets, e.g. data or wal")
        p.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=VALUE",
                       help="workload parameter, e.g. page_size=16K (repeatable)")
        p.add_argument("--rules", metavar="DIR", help="rules directory (default: the shipped rules)")
        p.add_argument("--json", action="store_true", help="the JSON document GET /recommend returns")
        p.set_defaults(func=func)


def _compute(args: argparse.Namespace) -> RecommendResponse | None:
    from advisor.cli import _settings
    from advisor.host.snapshot import collect_from_root
    from advisor.logs import setup_logging

    settings = _settings(args)
    setup_logging(settings.log_level, "text")
    book = load_rulebook(args.rules or settings.rules_dir)
    params = dict(args.param)
    if args.role:
        params["role"] = args.role
    host = asyncio.run(collect_from_root(settings.root, settings.command_timeout_seconds)).host
    try:
        return recommend(host, book, args.workload, params=params, pool=args.pool, dataset=args.dataset)
    except TargetError as exc:
        valid = f" (valid: {', '.join(exc.valid)})" if exc.valid else ""
        print(f"zfs-advisor: {exc.reason}{valid}", file=sys.stderr)
        return None


def cmd_recommend(args: argparse.Namespace) -> int:
    response = _compute(args)
    if response is None:
        return 2
    sys.stdout.write(response.model_dump_json(indent=2) + "\n" if args.json else recommend_text(response))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    response = _compute(args)
    if response is None:
        return 2
    if args.json:
        checks = [{"parameter": r.parameter, "status": r.status, "current": r.current, "expected": r.requirement,
                   "pool": r.pool, "dataset": r.dataset, "rule": r.rule} for r in response.recommendations]
        sys.stdout.write(json.dumps({"workload": response.workload, "checks": checks}, indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(verify_lines(response)) + "\n")
        s = response.summary
        sys.stdout.write(f"verify: {s.passed} passed, {s.change} failed, {s.skipped} skipped\n")
    return 1 if response.summary.change else 0
