"""`zfs-advisor evaluate --apps [DIR]`: `/recommend`'s answer scored on the application lab's
grids (advisor/model/app_evaluation.py, docs/apps.md)."""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from advisor.process.logs import setup_logging

CHECKOUT_GRIDS = Path("tests") / "lab" / "apps-data"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--apps", nargs="?", const="", metavar="DIR",
                   help="score the answer of /recommend (as --answers gives it, at 0, 1 and 2 probes, for a new "
                        "dataset and one at the workload's common value) on the application lab's grids in DIR "
                        "(default: tests/lab/apps-data of this checkout), in the cells the storage paced, the "
                        "probes from the probe's fio job beside the cell where its grid ran one; first, whether "
                        "that job ranks the recordsizes as the application does; the "
                        "shipped fit conditioned without the layout's fio cell with --shipped-fit, else a refit; "
                        "the last line sums it up")


def run_apps(args: argparse.Namespace, lab_rows: Callable[[str | None, str], list | None],
             answers_factory: Callable[[argparse.Namespace, list], Callable[[], Any] | int]) -> int:
    """`lab_rows` reads the prior, `answers_factory` makes the model --answers fits (cli/evaluate.py)."""
    from advisor.engine.loader import load_rulebook
    from advisor.model import answers, app_evaluation, probe_fidelity
    from advisor.model.app_grids import load_grids

    if args.budget is not None:
        print("zfs-advisor evaluate: --apps scores 0, 1 and 2 probes: leave --budget out", file=sys.stderr)
        return 2
    directory = Path(args.apps) if args.apps else _checkout() / CHECKOUT_GRIDS
    cells = load_grids(directory) if directory.is_dir() else []
    if not cells:
        print(f"zfs-advisor evaluate: --apps: no application grids (*.csv) in {directory}: run it from a checkout "
              "or give --apps DIR", file=sys.stderr)
        return 2
    prior = lab_rows(args.prior, "--prior")
    if prior is None:
        return 2
    versions = sorted({c.zfs_version for c in cells if c.scored})
    hosts_dir = Path(args.hosts) if args.hosts else _checkout() / "tests" / "fixtures" / "hosts" / (
        versions[0] if len(versions) == 1 else "<version>")
    if any(c.scored for c in cells) and not hosts_dir.is_dir():
        print(f"zfs-advisor evaluate: --apps: no host recordings at {hosts_dir}: run it from a checkout or give "
              "--hosts DIR", file=sys.stderr)
        return 2
    hosts = answers.load_hosts(hosts_dir) if hosts_dir.is_dir() else {}
    app_evaluation.unanswerable(cells, prior, hosts)
    factory = answers_factory(args, prior)
    if isinstance(factory, int):
        return factory
    setup_logging("info", "text")  # a refit takes a minute: say which fio cell it is on (stderr)
    rows, book = answers.measured_rows(args.prior), load_rulebook()
    cache: dict = {}  # one fit without the fio cell serves both calls
    given = app_evaluation.answers_for(cells, factory, prior, rows, book, hosts, cache)
    same_pace = app_evaluation.same_pace_for(cells, factory, prior, rows, book, hosts, cache)
    results = app_evaluation.evaluate(cells, given, prior, same_pace)
    fidelity = probe_fidelity.fidelity(cells)
    if args.json:
        print(json.dumps({"fidelity": [asdict(f) for f in fidelity],
                          "cells": [{**asdict(c), "name": c.name, "ranks": c.ranks()} for c in cells],
                          "answers": [asdict(r) for r in results],
                          "summary": app_evaluation.summary(cells, results)}, indent=2))
    else:
        print(probe_fidelity.table(fidelity) + "\n\n" + app_evaluation.report(cells, results))
    return 0


def _checkout() -> Path:
    import advisor

    return Path(advisor.__file__).resolve().parent.parent
