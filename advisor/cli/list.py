"""`zfs-advisor list`: the workloads the rule book knows, one line each (as `tuned-adm list` lists
profiles), or (--json) the document GET /v1/workloads returns."""
from __future__ import annotations

import argparse
import sys

from advisor.config.settings import load_settings
from advisor.engine.loader import load_rulebook
from advisor.engine.workload_list import workload_list


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="the workloads --workload takes, one line each")
    p.add_argument("--config", metavar="FILE", help="TOML settings file (its rules_dir is read)")
    p.add_argument("--rules", metavar="DIR", help="rules directory (default: the shipped rules)")
    p.add_argument("--json", action="store_true", help="the JSON document GET /v1/workloads returns")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    listed = workload_list(load_rulebook(args.rules or load_settings(args.config).rules_dir))
    if args.json:
        sys.stdout.write(listed.model_dump_json(indent=2) + "\n")
        return 0
    width = max((len(w.name) for w in listed.workloads), default=0)
    for w in listed.workloads:
        print(f"{w.name:<{width}}  {w.title}: {w.io['description']}")
    return 0
