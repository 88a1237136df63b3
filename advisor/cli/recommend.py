"""`zfs-advisor recommend`: exactly what GET /recommend computes, as text or (--json) the same JSON.

Exit codes: 0 success, 2 bad usage (unknown workload, pool, dataset or parameter; broken rules).
"""
from __future__ import annotations

import argparse
import sys

from advisor.answering.answerer import Answerer, Query
from advisor.cli.common import add_printing_subcommand, command_settings, read_host
from advisor.engine.loader import load_rulebook
from advisor.engine.models import RecommendResponse
from advisor.engine.script import recommend_script
from advisor.engine.service import TargetError
from advisor.engine.text import recommend_text
from advisor.model.regression_model import build_model
from advisor.recognise.auto_answer import recommend_auto, wants_auto, with_auto
from advisor.store.reader_health import with_store_state

# Recognition reads a dataset's I/O counters over a window (the service's last 5 minutes,
# docs/recognition.md); a command reads the host once, so it recognises nothing.
NO_WINDOW = ("zfs-advisor: workload auto: recognising a workload needs a window of I/O observations, and one run "
             "of this command reads the host once: this is the pool-level advice for any workload. Name the "
             "workload (zfs-advisor list), or ask the running service: GET /recommend?workload=auto")


def register(sub: argparse._SubParsersAction) -> None:
    p = add_target_arguments(add_printing_subcommand(sub, "recommend", "what to set for a workload (or any), why, and the commands"))
    p.add_argument("--format", choices=("text", "json", "script"), default="text",
                   help="text (default); json: as --json; script: a POSIX shell script to review, each change its "
                        "exact command after comments saying what and why, the rest as comments")
    p.set_defaults(func=run)


def add_target_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """What `recommend` and `verify` both take: the workload, its parameters and the target."""
    p.add_argument("--workload", help="workload profile, e.g. postgres: one of the files in the rules' workloads/ "
                   "directory, which `zfs-advisor list` and GET /v1/workloads describe (an unknown name is refused with "
                   "the list); without one, the general advice: pool layout, ashift, health, free space and module "
                   "parameters, for any workload; auto: the workload the dataset's I/O is recognised as, which needs "
                   "the service's window of observations (one run of this command has none: the general advice)")
    p.add_argument("--pool", help="pool to advise on (default: every pool)")
    p.add_argument("--dataset", help="dataset to advise on (default: a new <pool>/<workload> dataset); "
                   "without --workload: as --workload auto")
    p.add_argument("--role", help="which of the workload's datasets, e.g. data or wal")
    p.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=VALUE",
                   help="workload parameter, e.g. page_size=16K (repeatable)")
    p.add_argument("--rules", metavar="DIR", help="rules directory (default: the shipped rules)")
    p.add_argument("--json", action="store_true", help="the JSON document GET /recommend returns")
    return p


def _param(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def compute(args: argparse.Namespace) -> RecommendResponse | None:
    """The engine's answer for the arguments; None (after saying why on stderr) for a bad target."""
    config = command_settings(args)
    book = load_rulebook(args.rules or config.rules_dir)
    params = dict(args.param)
    if args.role:
        params["role"] = args.role
    host = read_host(config)
    answerer = Answerer(book, config.state_dir, build_model(config.state_dir, book, enabled=config.model).fit())
    asked = Query(args.workload, params, args.pool, args.dataset)
    try:
        if wants_auto(args.workload, args.dataset):  # the API's code path, with no window of observations
            answer = recommend_auto(answerer, host, {}, asked)
            print(NO_WINDOW, file=sys.stderr)
        else:
            answer = answerer.answer(host, asked)
        return with_store_state(answer, config.state_dir)
    except TargetError as exc:
        valid = f" (valid: {', '.join(with_auto(exc.valid) or [])})" if exc.valid else ""
        print(f"zfs-advisor: {exc.reason}{valid}", file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> int:
    response = compute(args)
    if response is None:
        return 2
    fmt = "json" if args.json else args.format
    if fmt == "script":
        sys.stdout.write(recommend_script(response, _invocation(args)))
    else:
        sys.stdout.write(response.model_dump_json(indent=2) + "\n" if fmt == "json" else recommend_text(response))
    return 0


def _invocation(args: argparse.Namespace) -> list[str]:
    """The command line that asks for this answer again (without --config and --rules: local paths)."""
    argv = ["zfs-advisor", "recommend"]
    for flag, value in (("--workload", args.workload), ("--pool", args.pool), ("--dataset", args.dataset),
                        ("--role", args.role), ("--root", args.root)):
        argv += [flag, value] if value else []
    return argv + [a for name, value in args.param for a in ("--param", f"{name}={value}")] + ["--format", "script"]
