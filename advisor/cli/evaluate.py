"""`zfs-advisor evaluate`: the regression model against the lab prior, offline (docs/model.md).

Leave one cell (layout × workload) out, let the advisor probe it by expected improvement within
`--budget` candidates and pick; print its pick against the measured best of the whole grid and
against the ZFS default, and how often the 90 % intervals cover the held-out measurements.

The other modes: `--answers` (advisor/model/answers.py), `--pairs`, `--fleet` (evaluate_fleet.py) and
`--apps` (evaluate_apps.py: the answers on the application lab's grids).

Exit codes: 0 done, 1 the model cannot run here (no scikit-learn, no prior rows), 2 bad usage.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.cli import evaluate_apps, evaluate_fleet
from advisor.model import sklearn_missing
from advisor.model.dataset import load_csv, prior_path, samples
from advisor.process.logs import setup_logging

if TYPE_CHECKING:  # imported where used: evaluating needs scikit-learn
    from advisor.model.evaluation import CellResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="the regression model against the lab prior (leave one cell out)")
    p.add_argument("--prior", metavar="CSV", help=f"prior data (default: the shipped {prior_path().name})")
    p.add_argument("--budget", metavar="N[,N...]",
                   help="candidates probed per held-out cell, the baseline included (default 1,2; --apps always scores 0,1,2)")
    p.add_argument("--models", default="gp,quantile-gb", metavar="NAME[,NAME...]",
                   help="models to compare: gp, gp-v9, gp-hdd-linear-mean, gp-with-width, gp-no-linear-mean, "
                        "quantile-gb, gp-workload (default gp,quantile-gb)")
    p.add_argument("--seed", type=int, default=0, help="random_state of the models (default 0)")
    p.add_argument("--caution", metavar="C[,C...]",
                   help="pick with these CAUTION values instead of the shipped one (one table each)")
    p.add_argument("--nested-caution", metavar="C[,C...]",
                   help="nested protocol: for each held-out cell choose CAUTION among these by leave-one-cell-out "
                        "on the other cells, then evaluate the held-out cell with it (fits every pair of cells: slow)")
    p.add_argument("--deviation", metavar="V[,V...]",
                   help="gp: prior variance of a pool's own deviation from the lab (log-ratio units) instead of "
                        "the shipped LOCAL_DEVIATION_VARIANCE (one table each; no refit)")
    p.add_argument("--leap", metavar="L[,L...]",
                   help="pick with these LEAP values instead of the shipped one: how many standard deviations an "
                        "unprobed candidate must be predicted better by than the best probed one (inf: probed "
                        "candidates only, -inf: the best predicted whether probed or not, written --leap=-inf; one table each)")
    p.add_argument("--cells", default="", metavar="TEXT",
                   help="hold out only the cells whose name contains TEXT, e.g. /512M (the model still learns "
                        "from all the others)")
    p.add_argument("--answers", action="store_true",
                   help="score the whole answer of /recommend (rules, the model without the cell, the cell's own "
                        "probe rows, the decision) instead of the model's pick; budgets may include 0, and "
                        "measure: the probe an undecided answer's measure command runs")
    p.add_argument("--pairs", action="store_true",
                   help="is the model's probability of a gain what it says? every pair of a held-out cell's candidates "
                        "one decision compares, grouped by that probability, against the share that measured a gain, "
                        "raw and calibrated by a scale fitted on the other cells' pairs (budgets may include 0; the "
                        "shipped fit with --shipped-fit, seconds; else a refit per cell of the first model of --models)")
    p.add_argument("--hosts", metavar="DIR",
                   help="--answers, --apps: the lab's host recordings, one <layout>/idle per layout (default: "
                        "tests/fixtures/hosts/<the prior's OpenZFS version> of this checkout)")
    p.add_argument("--shipped-fit", action="store_true",
                   help="--answers, --apps: condition the shipped fit on the other cells instead of refitting without each "
                        "(seconds instead of minutes; its hyperparameters saw every cell)")
    p.add_argument("--test", metavar="CSV",
                   help="--answers: score the cells of CSV (lab rows in the prior's columns, none of its cells in the "
                        "prior) with one fit of the whole prior, layouts the model never saw: the shipped fit with "
                        "--shipped-fit, else a refit of the first model of --models (a GP: gp, gp-v9, ...)")
    p.add_argument("--change-probability", metavar="P[,P...]",
                   help="--answers: decide with these CHANGE_PROBABILITY values instead of the shipped one (how sure "
                        "a prediction must be of a gain to advise a change; one table each)")
    evaluate_fleet.add_arguments(p)
    evaluate_apps.add_arguments(p)
    p.add_argument("--json", action="store_true", help="the per-cell results and summaries as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    missing = sklearn_missing()
    if missing:
        print(f"zfs-advisor evaluate: {missing}", file=sys.stderr)
        return 1
    from advisor.model.answers import MEASURE

    try:
        budgets, cautions, nested, deviations, leaps = _numbers(args, MEASURE)
    except _Usage as exc:
        print(f"zfs-advisor evaluate: {exc}", file=sys.stderr)
        return 2
    if args.test and not args.answers:
        print("zfs-advisor evaluate: --test scores answers: give --answers with it", file=sys.stderr)
        return 2
    if args.fleet:
        return evaluate_fleet.run_fleet(args, _held_out_setup)
    if args.apps is not None:
        return evaluate_apps.run_apps(args, _lab_rows, _answers_factory)
    if args.answers:
        return _answers(args, budgets)
    if args.pairs:
        return _pairs(args, budgets)
    return _picks(args, budgets, (cautions, nested, deviations, leaps))


def _picks(args: argparse.Namespace, budgets: list[int], settings: tuple) -> int:
    """The model's pick against each held-out cell's grid (the mode without --answers, --pairs, ...)."""
    from advisor.model.regress import MODELS

    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODELS]
    if unknown or not names or not budgets or min(budgets) < 1:
        print(f"zfs-advisor evaluate: models must be among {sorted(MODELS)} and budgets >= 1", file=sys.stderr)
        return 2
    prior = _lab_rows(args.prior, "--prior")
    if prior is None:
        return 2
    cells = sorted({s.obs.cell for s in prior})
    held = [c for c in cells if args.cells in c]
    if not held:
        print(f"zfs-advisor evaluate: no cell's name contains {args.cells!r}; cells: {', '.join(cells)}",
              file=sys.stderr)
        return 2
    if len(cells) < 2:
        print(f"zfs-advisor evaluate: {len(cells)} cell(s) in the prior: leaving one out needs at least two",
              file=sys.stderr)
        return 1
    report = _leave_one_out(args, names, budgets, settings, prior, cells, held)
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


DEFAULT_BUDGETS = "1,2"  # --budget's, where the mode takes it (--apps scores 0, 1 and 2)


class _Usage(ValueError):
    """A command-line value refused: the message says which and what is expected (exit 2)."""


def _numbers(args: argparse.Namespace, measure: int) -> tuple[list[int], list[float | None], list[float],
                                                              list[float | None], list[float | None]]:
    """--budget, --caution, --nested-caution, --deviation and --leap as numbers; _Usage says what is wrong."""
    try:  # `measure` (--answers): the probe an undecided answer's own command runs; a number is a
        # count of probes, never MEASURE's internal value (-1 must stay a bad budget)
        budgets = [measure if b.strip() == "measure" and args.answers else _count(b)
                   for b in (args.budget or DEFAULT_BUDGETS).split(",") if b.strip()]
    except ValueError:
        raise _Usage(f"--budget {args.budget!r}: expected numbers like 1,2 (--answers: and measure)") from None
    try:
        cautions: list[float | None] = [float(c) for c in (args.caution or "").split(",") if c.strip()] or [None]
        nested = [float(c) for c in (args.nested_caution or "").split(",") if c.strip()]
        deviations: list[float | None] = [float(v) for v in (args.deviation or "").split(",") if v.strip()] or [None]
        leaps: list[float | None] = [float(v) for v in (args.leap or "").split(",") if v.strip()] or [None]
    except ValueError:
        raise _Usage("--caution, --nested-caution, --deviation and --leap take numbers like 0,0.5,1") from None
    if any(v is not None and math.isnan(v) for v in cautions + nested + deviations + leaps):
        raise _Usage("nan is not a value of --caution, --nested-caution, --deviation or --leap")
    if any(v is not None and v < 0 for v in deviations):
        raise _Usage("--deviation values are variances, at least 0")
    return budgets, cautions, nested, deviations, leaps


def _leave_one_out(args: argparse.Namespace, names: list[str], budgets: list[int], settings: tuple,
                   prior: list, cells: list[str], held: list[str]) -> list[dict]:
    """Each model at each budget and setting (CAUTION, deviation, LEAP; nested CAUTION), the held-out
    cells in turn: one report entry each, its table printed unless --json."""
    from advisor.model.evaluation import evaluate, nested_caution, summary, table
    from advisor.model.regress import MODELS

    cautions, nested, deviations, leaps = settings
    report = []
    for name in names:
        cache: dict = {}  # one fit per training set, shared by budgets and CAUTION values

        def factory(name=name):  # bound now: called within this iteration only, but said so
            return MODELS[name](seed=args.seed)

        for budget in budgets:
            runs: list[tuple[float | str | None, float | None, float | None, list[CellResult]]] = [
                (c, d, lp, evaluate(factory, prior, budget, c, cache, d, args.cells, lp))
                    for c in cautions for d in deviations for lp in leaps]
            if nested:
                runs.append(("nested", None, None, nested_caution(factory, prior, budget, nested, cache)))
            for caution, deviation, leap, results in runs:
                report.append({"model": name, "budget": budget, "caution": caution, "deviation": deviation,
                               "leap": leap, "summary": summary(results), "cells": [r.__dict__ for r in results]})
                if not args.json:
                    how = ("" if caution is None else f", CAUTION chosen per cell among {args.nested_caution} "
                           "(nested)" if caution == "nested" else f", CAUTION {caution:g}")
                    how += "" if deviation is None else f", deviation variance {deviation:g}"
                    how += "" if leap is None else f", LEAP {leap:g}"
                    print(f"\n{name}, budget {budget} probe(s) per cell{how}, {len(prior)} lab rows in "
                          f"{len(cells)} cells" + (f", {len(held)} held out in turn" if args.cells else "") + ":")
                    print(table(results))
    return report


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"{value} probes")
    return value


def _scored_rows(args: argparse.Namespace, prior: list) -> list | None:
    """The lab rows --answers scores: --test's (cells the prior lacks), else the prior's; None: said why."""
    if not args.test:
        return prior
    test = _lab_rows(args.test, "--test")
    if test is None:
        return None
    shared = sorted({s.obs.cell for s in test} & {s.obs.cell for s in prior})
    if not test or shared:
        print(f"zfs-advisor evaluate: --test {args.test}: " + (f"cells of the prior, not held out: {', '.join(shared)}"
              if shared else "no lab rows with a measured baseline"), file=sys.stderr)
        return None
    return test


def _answers_factory(args: argparse.Namespace, prior: list) -> Callable[[], Any] | int:
    """What --answers fits per held-out cell (or the one fit it conditions), or the exit code."""
    from advisor.model.evaluation import AsFitted, ShippedFit

    if args.test and not args.shipped_fit:  # one fit on the whole prior, of the first model named
        name = _first_model(args, "--test")
        if name is None:
            return 2
        return partial(AsFitted, _as_shipped(name, args.seed).fit(prior))
    if args.shipped_fit:
        predictor = _shipped(args)
        if predictor is None:
            return 1
        return partial(AsFitted, predictor) if args.test else partial(ShippedFit, predictor, prior)
    return partial(_as_shipped, "gp", args.seed)  # refit per held-out cell as the service's fit is made


def _thresholds(args: argparse.Namespace) -> list[float | None] | None:
    """--change-probability's values ([None]: the shipped one); None: refused, said why."""
    try:
        thresholds: list[float | None] = [float(v) for v in (args.change_probability or "").split(",")
                                          if v.strip()] or [None]
    except ValueError:
        thresholds = [-1.0]
    if any(t is not None and not 0.5 <= t < 1 for t in thresholds):
        print("zfs-advisor evaluate: --change-probability takes probabilities in [0.5, 1), e.g. 0.8,0.95",
              file=sys.stderr)
        return None
    return thresholds


def _recorded_hosts(args: argparse.Namespace, prior: list, scored: list) -> tuple[Any, dict, list[str]] | None:
    """(the recordings' directory, the recorded hosts by layout, the scored rows' layouts), when a
    scored cell has a recording; None: said why."""
    from pathlib import Path

    from advisor.model import answers

    versions = sorted({s.obs.cell.split("/")[0].removeprefix("zfs") for s in prior})
    hosts_dir = Path(args.hosts) if args.hosts else _checkout_hosts(versions)
    if hosts_dir is None or not hosts_dir.is_dir():
        print(f"zfs-advisor evaluate: no host recordings at {hosts_dir or 'tests/fixtures/hosts/<version>'}: "
              "run it from a checkout or give --hosts DIR", file=sys.stderr)
        return None
    hosts = answers.load_hosts(hosts_dir)
    layouts = sorted({s.obs.cell.split("/")[1] for s in scored})
    held = [c for c in sorted({s.obs.cell for s in scored}) if args.cells in c and c.split("/")[1] in hosts]
    if not held:
        print(f"zfs-advisor evaluate: no cell contains {args.cells!r} with a recording in {hosts_dir} "
              f"(recorded: {', '.join(sorted(hosts))}; prior layouts: {', '.join(layouts)})", file=sys.stderr)
        return None
    return hosts_dir, hosts, layouts


def _answers(args: argparse.Namespace, budgets: list[int]) -> int:
    """`--answers`: the whole answer, scored per cell (advisor/model/answers.py)."""
    from dataclasses import asdict

    from advisor.engine.loader import load_rulebook
    from advisor.model import answers

    if not budgets or any(b < 0 and b != answers.MEASURE for b in budgets):
        print("zfs-advisor evaluate: --answers takes budgets >= 0 and measure, e.g. 0,1,2,measure", file=sys.stderr)
        return 2
    setup_logging("info", "text")  # a refit per cell takes minutes: say which cell it is on (stderr)
    prior = _lab_rows(args.prior, "--prior")
    if prior is None:
        return 2
    scored = _scored_rows(args, prior)
    if scored is None:
        return 2
    recorded = _recorded_hosts(args, prior, scored)
    if recorded is None:
        return 2
    hosts_dir, hosts, layouts = recorded
    factory = _answers_factory(args, prior)
    if isinstance(factory, int):
        return factory
    thresholds = _thresholds(args)
    if thresholds is None:
        return 2
    rows, book = answers.measured_rows(args.test or args.prior), load_rulebook()
    cache: dict = {}  # one fit per training set, shared by the thresholds
    skipped = [layout for layout in layouts if layout not in hosts]
    report = []
    for threshold in thresholds:
        with answers.change_probability(threshold):
            results = answers.evaluate_answers(factory, scored, rows, book, hosts, budgets, args.cells, cache,
                                               fitted_on=prior if args.test else None)
        report.append({"change_probability": threshold, "results": [asdict(r) for r in results],
                       "summary": {answers.budget_name(b): answers.summary([r for r in results if r.budget == b])
                                   for b in budgets}})
        if not args.json:
            if threshold is not None:
                print(f"\nCHANGE_PROBABILITY {threshold:g}:")
            print(answers.table(results))
            print()
            print(answers.summary_table(results))
    if args.json:
        print(json.dumps({"runs": report, "not_recorded": skipped}, indent=2))
        return 0
    if skipped:
        print(f"\nlayouts of the prior without a recording in {hosts_dir} (not scored): {', '.join(skipped)}")
    return 0


def _pairs(args: argparse.Namespace, budgets: list[int]) -> int:
    """`--pairs`: the model's probability of a gain against what the held-out cells measured
    (advisor/model/calibration.py)."""
    from advisor.model import calibration

    if not budgets or min(budgets) < 0:
        print("zfs-advisor evaluate: --pairs takes budgets >= 0, e.g. 0,1", file=sys.stderr)
        return 2
    setup = _held_out_setup(args, "--pairs")
    if isinstance(setup, int):
        return setup
    prior, factory = setup
    cache: dict = {}
    report = []
    for budget in budgets:
        results = calibration.held_out_calibration(calibration.evaluate_pairs(factory, prior, budget, args.cells, cache))
        report.append({"budget": budget, "summary": calibration.summary(results),
                       "calibrated": calibration.summary(results, calibrated=True),
                       "scale": calibration.scale_for(results),
                       "pairs": [r.__dict__ for r in results]})
        if not args.json:
            print(f"\n{budget} probe(s) per held-out cell, {len(results)} predicted pairs (scale on all of them: "
                  f"{calibration.scale_for(results):.2f}):")
            print(calibration.table(results))
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


def _held_out_setup(args: argparse.Namespace, flag: str) -> tuple[list, Callable[[], Any]] | int:
    """The prior and a factory of the model fitted without each held-out cell (--shipped-fit: the
    shipped fit conditioned without it, seconds; else a refit of the first model of --models), or
    the exit code after saying why not."""
    from advisor.model.regress import MODELS

    prior = _lab_rows(args.prior, "--prior")
    if prior is None:
        return 2
    names = sorted({s.obs.cell for s in prior})
    if len(names) < 2:
        print("zfs-advisor evaluate: leaving one cell out needs at least two in the prior", file=sys.stderr)
        return 1
    if not any(args.cells in c for c in names):
        print(f"zfs-advisor evaluate: no cell's name contains {args.cells!r}; cells: {', '.join(names)}",
              file=sys.stderr)
        return 2
    from advisor.model.evaluation import ShippedFit

    factory: Callable[[], Any]
    if args.shipped_fit:
        predictor = _shipped(args)
        if predictor is None:
            return 1
        factory = partial(ShippedFit, predictor, prior)
    else:  # a refit per held-out cell, of the first model named
        name = _first_model(args, flag)
        if name is None:
            return 2
        factory = partial(MODELS[name], seed=args.seed)
    return prior, factory


def _lab_rows(path: str | None, flag: str) -> list | None:
    """The samples of a lab CSV (None: the shipped prior), or None after saying why it cannot be read."""
    try:
        return samples(load_csv(path))
    except (OSError, UnicodeDecodeError) as exc:
        print(f"zfs-advisor evaluate: {flag} {path}: {exc.strerror if isinstance(exc, OSError) else exc}",
              file=sys.stderr)
    except (KeyError, ValueError) as exc:  # not the prior's columns (tests/lab/prior_grid.py COLUMNS)
        print(f"zfs-advisor evaluate: {flag} {path}: not a lab grid in the prior's columns ({exc})", file=sys.stderr)
    return None


def _shipped(args: argparse.Namespace) -> Any:
    """The fit shipped beside the prior (a GPPredictor), or None after saying why it cannot be used."""
    from advisor.model import fitted

    try:
        predictor, _ = fitted.load(Path(args.prior) if args.prior else prior_path())
    except fitted.FittedError as exc:
        print(f"zfs-advisor evaluate: --shipped-fit: {exc}", file=sys.stderr)
        return None
    return predictor


def _as_shipped(name: str, seed: int) -> Any:
    """An unfitted model of MODELS, fitted as the shipped one is: a GP with the calibration of its
    P(gain) on the training cells' held-out pairs (advisor/model/calibration.py)."""
    from advisor.model.regress import MODELS, GPModel

    cls: Any = MODELS[name]
    return cls(seed=seed, calibrate=True) if issubclass(cls, GPModel) else cls(seed=seed)


def _first_model(args: argparse.Namespace, flag: str) -> str | None:
    """The first model of --models, or None after saying it is not one."""
    from advisor.model.regress import MODELS

    name = next((m.strip() for m in args.models.split(",") if m.strip()), "")
    if name not in MODELS:
        print(f"zfs-advisor evaluate: {flag} refits a model of {sorted(MODELS)}, not {name!r} (or give --shipped-fit)",
              file=sys.stderr)
        return None
    return name


def _checkout_hosts(versions: list[str]) -> Path | None:
    import advisor

    base = Path(advisor.__file__).resolve().parent.parent / "tests" / "fixtures" / "hosts"
    return base / versions[0] if len(versions) == 1 else None
