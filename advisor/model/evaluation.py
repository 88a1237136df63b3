"""Leave-one-cell-out evaluation on the lab prior: does the advisor, probing N candidates of a pool
it has never seen, pick what the full grid says is best?

For each cell (a layout × workload of the prior) held out: the model is fitted on the other
cells; the cell is then "probed" by replaying its measured repeats, candidate by candidate in
the order expected improvement asks for them (the baseline first), up to the budget; the pick
is the model's best (predicted write p99 within 1.5x the default's).  The oracle is the
measured best of the whole grid under the rule of advisor/engine/measured.py (most IOPS whose
worst write p99 is at most 1.5x the default's worst).  Candidates not probed give the
predicted-vs-measured check: does the 90 % interval for one measurement cover each repeat?
"""
from __future__ import annotations

import copy
import math
import statistics
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from advisor.engine.measured import WRITE_P99_TOLERANCE
from advisor.model.dataset import Sample, cells
from advisor.model.features import Observation, settings_key
from advisor.model.select import next_candidates, pick

if TYPE_CHECKING:  # imported where used: numpy
    from advisor.model.gp import FittedGP, GPPredictor


@dataclass
class CellResult:
    cell: str
    model: str
    budget: int
    grid: int
    probed: list[str]
    pick: str
    oracle: str
    pick_vs_oracle: float
    pick_vs_default: float
    oracle_vs_default: float
    pick_p99_ok: bool
    caution: float | None = None  # the pick's CAUTION (None: the shipped constant)
    leap: float | None = None  # the pick's LEAP (None: the shipped constant)
    covered: int = 0
    checked: int = 0
    abs_errors: list[float] = field(default_factory=list)  # |predicted mean - measured mean| of log ratios
    p99_covered: int = 0  # the same check for the write p99's interval
    p99_checked: int = 0


def _label(o: Observation) -> str:
    return f"{o.parameter}={o.value}"


def _grid(cell: list[Sample]) -> dict[tuple, list[Sample]]:
    by: dict[tuple, list[Sample]] = {}
    for s in cell:
        by.setdefault(settings_key(s.obs), []).append(s)
    return by


def _mean_ratio(samples: list[Sample]) -> float:
    """Mean perf over the baseline's (of each sample's own run: a cell measured in two runs)."""
    return statistics.fmean(math.exp(s.y_perf) for s in samples)


def _worst_p99_ratio(samples: list[Sample]) -> float | None:
    values = [math.exp(s.y_p99) for s in samples if s.y_p99 is not None]
    return max(values) if values else None


def oracle(grid: dict[tuple, list[Sample]]) -> tuple:
    """The measured best of a cell's grid (advisor/engine/measured.py measured_best), on ratios to
    the baseline: with one run per cell the same as on raw means."""
    base = next(k for k, rs in grid.items() if rs[0].obs.baseline)
    base_p99 = _worst_p99_ratio(grid[base])
    limit = base_p99 * WRITE_P99_TOLERANCE if base_p99 else None
    ranked = sorted(grid, key=lambda k: -_mean_ratio(grid[k]))
    for k in ranked:
        p99 = _worst_p99_ratio(grid[k])
        if limit is None or p99 is None or p99 <= limit:
            return k
    return ranked[0]


def _fit(model_factory, prior: list[Sample], excluded: frozenset[str], cache: dict | None):
    """The model fitted on every cell but `excluded` (kept in `cache` when given: the nested
    protocol fits each training set once)."""
    if cache is not None and excluded in cache:
        return cache[excluded]
    model = model_factory().fit([s for s in prior if s.obs.cell not in excluded])
    if cache is not None:
        cache[excluded] = model
    return model


class ShippedFit:
    """The shipped fit as a model that `_fit` can "fit": `fit(rows)` conditions the shipped GPs on
    the lab rows of the cells in `rows` alone (advisor/model/gp.py conditioned_on), without a
    refit: seconds instead of minutes a cell.  The hyperparameters stay those fitted on every row,
    the held-out cell's included, so it flatters the held-out cell a little; a real refit
    (`MODELS["gp"]`) is the honest check."""
    name = "gp (shipped fit)"
    fitted: GPPredictor  # set by fit()

    def __init__(self, predictor, prior: list[Sample]):
        self.predictor, self.prior = predictor, prior

    def fit(self, rows: list[Sample]) -> ShippedFit:
        import numpy as np

        from advisor.model.gp import GPPredictor, conditioned_on

        kept = {s.obs.cell for s in rows}

        def without(perf: FittedGP, p99: FittedGP | None, of: list[Sample]) -> tuple[FittedGP, FittedGP | None]:
            with_p99 = [s for s in of if s.y_p99 is not None]
            mask = lambda items: np.array([s.obs.cell in kept for s in items])  # noqa: E731 - a one-line filter, used twice below
            return conditioned_on(perf, mask(of)), conditioned_on(p99, mask(with_p99)) if p99 is not None else None

        p = self.predictor
        by_workload = {w: without(perf, p99, [s for s in self.prior if s.obs.workload == w])
                       for w, (perf, p99) in p.by_workload.items()}
        twin = ShippedFit(self.predictor, self.prior)
        twin.fitted = GPPredictor(*without(p.perf, p.p99, self.prior), p.deviation, by_workload, p.calibration)
        return twin

    def predict(self, local, queries):
        return self.fitted.predict(local, queries)


class AsFitted:
    """A fit of the whole prior as it is (the shipped one, or a model fitted once), for cells it
    never saw (`evaluate --answers --test CSV`): `fit` keeps it whole, since nothing of the test
    cells is in it to leave out.  A clean hold-out: its hyperparameters were fitted without them too."""
    name = "fitted on the prior (test cells)"

    def __init__(self, predictor):
        self.fitted = predictor  # anything with predict(local, queries): a GPPredictor, a fitted model

    def fit(self, rows: list[Sample]) -> AsFitted:
        return self

    def predict(self, local, queries):
        return self.fitted.predict(local, queries)


def with_deviation(model, deviation: float | None):
    """The fitted GP with another prior variance for the pool's own deviation from the lab
    (advisor/model/gp.py): no refit, the deviation only enters the predictions."""
    from advisor.model.gp import GPPredictor

    if deviation is not None and getattr(model, "by_workload", None) is not None:  # WorkloadGP: each of its GPs
        twin = copy.copy(model)
        twin.overall = with_deviation(model.overall, deviation)
        twin.by_workload = {w: with_deviation(m, deviation) for w, m in model.by_workload.items()}
        return twin
    if deviation is None or not isinstance(getattr(model, "fitted", None), GPPredictor):
        return model
    twin = copy.copy(model)
    twin.fitted = model.fitted.with_deviation(deviation)
    twin.deviation = deviation
    return twin


def twins(held: str, names) -> frozenset[str]:
    """`held` and the cells of the same line, layout and workload at another working set
    ("zfs2.3.2/ssd-mirror2x2/postgres/192M" for ".../512M"): measurements of the held-out pool
    itself, which a pool new to the prior would not have, so they leave the training set too."""
    stem = held.rsplit("/", 1)[0] if held.count("/") >= 3 else held
    return frozenset(c for c in names if c == held or c.startswith(stem + "/")) | {held}


def probe_in_order(model, grid: dict[tuple, list[Sample]], budget: int,
                   reference: tuple | None = None) -> tuple[list[Sample], list[str]]:
    """A probe of the held-out pool, replayed: the cell's measured repeats of the first `budget`
    candidates in the order the advisor asks for them (the baseline, then expected improvement),
    and their labels.  `reference`: the grid's key of a dataset's current value, measured in place
    of the baseline when the budget holds another value, the others chosen with it in one run (as
    the profiler does for a dataset it is told of: the model reads nothing of a run without the default)."""
    queries = [replace(rs[0].obs, perf=None, write_p99=None) for rs in grid.values()]
    if reference is not None and budget >= 2:
        ref = queries[list(grid).index(reference)]
        chosen = next_candidates(model, [], queries, budget, reference=ref)
        return [s for c in chosen for s in grid[settings_key(c)]], [_label(c) for c in chosen]
    local: list[Sample] = []
    probed: list[str] = []
    while len(probed) < budget:
        nxt = next_candidates(model, local, queries, 1)
        if not nxt:
            break
        local += grid[settings_key(nxt[0])]
        probed.append(_label(nxt[0]))
    return local, probed


def evaluate_cell(model_factory, prior: list[Sample], held: str, budget: int, caution: float | None = None,
                  exclude: frozenset[str] = frozenset(), cache: dict | None = None,
                  deviation: float | None = None, leap: float | None = None) -> CellResult:
    """Hold `held` out (with its `twins`, and `exclude`: the nested protocol's outer cell), probe it
    `budget` times, pick with `caution` and `leap` (None: the shipped CAUTION, LEAP)."""
    by_cell = cells(prior)
    model = with_deviation(_fit(model_factory, prior, twins(held, by_cell) | exclude, cache), deviation)
    grid = _grid(by_cell[held])
    keys = list(grid)
    candidates = [grid[k][0].obs for k in keys]
    queries = [replace(c, perf=None, write_p99=None) for c in candidates]
    local, probed = probe_in_order(model, grid, budget)
    chosen, prediction = pick(model, local, queries, caution, leap)
    best = oracle(grid)
    mean = {k: _mean_ratio(grid[k]) for k in keys}
    base = next(k for k in keys if grid[k][0].obs.baseline)
    pick_key = keys[chosen]
    base_p99, pick_p99 = _worst_p99_ratio(grid[base]), _worst_p99_ratio(grid[pick_key])
    p99_ok = base_p99 is None or pick_p99 is None or pick_p99 <= WRITE_P99_TOLERANCE * base_p99
    result = CellResult(
        cell=held, model=getattr(model, "name", type(model).__name__), budget=budget, grid=len(keys),
        probed=probed, pick=_label(candidates[chosen]), oracle=_label(grid[best][0].obs),
        pick_vs_oracle=mean[pick_key] / mean[best], pick_vs_default=mean[pick_key] / mean[base],
        oracle_vs_default=mean[best] / mean[base], pick_p99_ok=p99_ok, caution=caution, leap=leap)
    probed_keys = {settings_key(s.obs) for s in local}
    for i, k in enumerate(keys):
        if k in probed_keys:
            continue
        ys = [s.y_perf for s in grid[k]]
        covered, checked = _coverage(prediction.perf, i, ys)
        result.covered, result.checked = result.covered + covered, result.checked + checked
        result.abs_errors.append(abs(float(prediction.perf.mean[i]) - statistics.fmean(ys)))
        if prediction.p99 is not None:
            covered, checked = _coverage(prediction.p99, i, [s.y_p99 for s in grid[k] if s.y_p99 is not None])
            result.p99_covered, result.p99_checked = result.p99_covered + covered, result.p99_checked + checked
    return result


def _coverage(dist, i: int, measured: list[float]) -> tuple[int, int]:
    """(how many of the measured repeats the 90 % interval for one measurement at candidate i
    covers, how many there are)."""
    lo, hi = dist.interval(i, measurement=True)
    return sum(lo <= y <= hi for y in measured), len(measured)


def evaluate(model_factory, prior: list[Sample], budget: int, caution: float | None = None,
             cache: dict | None = None, deviation: float | None = None, only: str = "",
             leap: float | None = None) -> list[CellResult]:
    """Every cell whose name contains `only` (all by default), held out in turn."""
    return [evaluate_cell(model_factory, prior, held, budget, caution, cache=cache, deviation=deviation, leap=leap)
            for held in sorted(cells(prior)) if only in held]


def score(results: list[CellResult]) -> float:
    """What the nested protocol maximises: the mean over cells of pick / oracle, capped at 1 (a
    pick "better" than the oracle broke the write p99 limit), i.e. 1 - the mean regret."""
    return statistics.fmean(min(r.pick_vs_oracle, 1.0) for r in results)


def nested_caution(model_factory, prior: list[Sample], budget: int, values: list[float],
                   cache: dict | None = None) -> list[CellResult]:
    """Leave one cell out with CAUTION chosen inside: for each outer cell, every value of `values`
    is scored by leave-one-cell-out on the other cells alone (`score`; a tie goes to the larger,
    more cautious value), and the outer cell is then evaluated with the winner.  The outer cell
    never takes part in choosing the knob it is judged with; the results say how well choosing
    CAUTION this way carries over to a pool not in the prior."""
    cache = {} if cache is None else cache
    names = sorted(cells(prior))
    out = []
    for outer in names:
        held = twins(outer, names)
        inner = [c for c in names if c not in held]
        scores = {v: score([evaluate_cell(model_factory, prior, c, budget, v, held, cache)
                            for c in inner]) for v in values}
        best = max(values, key=lambda v: (scores[v], v))
        out.append(evaluate_cell(model_factory, prior, outer, budget, best, cache=cache))
    return out


def summary(results: list[CellResult]) -> dict[str, float]:
    ratios = [r.pick_vs_oracle for r in results]
    checked = sum(r.checked for r in results)
    errors = [e for r in results for e in r.abs_errors]
    p99_checked = sum(r.p99_checked for r in results)
    return {
        "cells": len(results),
        "median_vs_oracle": statistics.median(ratios) if ratios else math.nan,
        "worst_vs_oracle": min(ratios) if ratios else math.nan,
        "median_vs_default": statistics.median(r.pick_vs_default for r in results) if results else math.nan,
        "probes_fraction": (statistics.fmean(len(r.probed) / r.grid for r in results) if results else math.nan),
        "p99_ok": sum(r.pick_p99_ok for r in results),
        "coverage": sum(r.covered for r in results) / checked if checked else math.nan,
        "checked": checked,
        "p99_coverage": sum(r.p99_covered for r in results) / p99_checked if p99_checked else math.nan,
        "p99_checked": p99_checked,
        "median_abs_error": statistics.median(errors) if errors else math.nan,
    }


def table(results: list[CellResult]) -> str:
    lines = [f"{'cell':34s} {'model':11s} {'probed':>6s} {'pick':18s} {'oracle':18s} {'pick/oracle':>11s} "
             f"{'pick/default':>12s} {'oracle/default':>14s} {'p99 ok':>6s} {'covered':>8s}"]
    for r in results:
        lines.append(f"{r.cell:34s} {r.model:11s} {len(r.probed):>3d}/{r.grid:<2d} {r.pick:18s} {r.oracle:18s} "
                     f"{r.pick_vs_oracle:>11.1%} {r.pick_vs_default:>12.2f} {r.oracle_vs_default:>14.2f} "
                     f"{'yes' if r.pick_p99_ok else 'NO':>6s} {r.covered:>3d}/{r.checked:<4d} "
                     f"{'' if r.caution is None else f'{r.caution:g}':>7s}")
    s = summary(results)
    lines.append(f"{'summary':34s} {results[0].model if results else '':11s} "
                 f"median pick/oracle {s['median_vs_oracle']:.1%}, worst {s['worst_vs_oracle']:.1%}, "
                 f"median pick/default {s['median_vs_default']:.2f}, probes {s['probes_fraction']:.0%} of the grid, "
                 f"write p99 within 1.5x the default's in {s['p99_ok']}/{s['cells']}, "
                 f"90% interval covers {s['coverage']:.0%} of {s['checked']} held-out repeats "
                 f"(write p99's: {s['p99_coverage']:.0%} of {s['p99_checked']}), "
                 f"median |error| {s['median_abs_error']:.3f} (log ratio)")
    return "\n".join(lines)
