"""Is the model's probability of a gain what it says?  A leave-one-cell-out check of the number the
answer decides on (`zfs-advisor evaluate --pairs`, docs/model.md).

An answer changes a setting when the model gives the proposal a probability of beating the current
value of at least CHANGE_PROBABILITY (advisor/engine/decide.py).  That probability is only worth
its threshold if, among held-out pairs the model gives about P, about P measured a gain.  For each
cell of the prior, held out with its twins: the model without it predicts every pair of the cell's
candidates that one decision compares (two values of one parameter, or a value and the default),
after the first `budget` probes of the held-out pool (the baseline, then expected improvement,
replayed from the cell's rows); a pair both of whose values were probed is measured, not
predicted, and left out.  Each pair is turned so that its predicted winner comes first, and the
pairs are grouped by that probability: how many of each group measured a gain (the mean of the
winner's repeats above the other's).

The same pairs calibrate the probability the answer decides on (temperature scaling: Platt 1999;
Guo et al. 2017, "On Calibration of Modern Neural Networks"): for each number of candidates the
pool has probed, the factor `scale` on the standard deviation of a predicted difference that
makes P(gain) = Phi(z / scale) most likely to have produced the measured outcomes.  Fitted with
the model (advisor/model/fitted.py), from the pairs of each cell held out in turn, the GP
conditioned on the others; the answer's intervals and P(gain) read it (advisor/model/provider.py),
the pick does not.  `evaluate --pairs` checks it held out: the scale for a cell is fitted on the
other cells' pairs.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from functools import partial
from itertools import combinations
from statistics import NormalDist

from advisor.model.dataset import Sample, cells
from advisor.model.evaluation import _fit, _grid, _label, probe_in_order, twins
from advisor.model.features import settings_key

# the groups of predicted probabilities, the decision's thresholds among their edges
BINS = ((0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 0.95), (0.95, 0.99), (0.99, 1.0))
# The probe budgets a scale is fitted for: nothing probed, the baseline alone, two candidates or more
# (the last also stands for more).  Fewer pairs than MIN_PAIRS at a budget: no scale (1).
SCALED_BUDGETS = (0, 1, 2)
MIN_PAIRS = 30
SCALES = tuple(k / 100 for k in range(25, 301))  # the scales tried: 0.25 .. 3.00
_NORMAL = NormalDist()


@dataclass
class PairResult:
    cell: str
    budget: int
    winner: str  # the candidate predicted better ("recordsize=8K")
    other: str
    probability: float  # P(winner beats other) under the model's predictive distribution
    predicted_ratio: float  # expected perf of winner / other
    measured_ratio: float  # mean perf of winner / other, over the cell's repeats
    z: float = 0.0  # predicted log ratio / its standard deviation: probability = Phi(z)
    calibrated: float | None = None  # Phi(z / scale), the scale fitted on the other cells' pairs

    @property
    def gained(self) -> bool:
        return self.measured_ratio > 1.0


def _compared(a, b) -> bool:
    """Whether one decision compares these two candidates: the same parameter, or one is the default."""
    return a.baseline or b.baseline or a.parameter == b.parameter


def evaluate_pairs(model_factory, prior: list[Sample], budget: int, only: str = "",
                   cache: dict | None = None) -> list[PairResult]:
    """Every predicted pair of every cell whose name contains `only`, held out in turn."""
    by_cell = cells(prior)
    normal = NormalDist()
    out: list[PairResult] = []
    for held in sorted(c for c in by_cell if only in c):
        model = _fit(model_factory, prior, twins(held, by_cell), cache)
        grid = _grid(by_cell[held])
        keys = list(grid)
        queries = [replace(grid[k][0].obs, perf=None, write_p99=None) for k in keys]
        local, _ = probe_in_order(model, grid, budget)
        probed = {settings_key(s.obs) for s in local}
        perf = model.predict(local, queries).perf
        mean = [statistics.fmean(s.y_perf for s in grid[k]) for k in keys]
        for i, j in combinations(range(len(keys)), 2):
            if (keys[i] in probed and keys[j] in probed) or not _compared(queries[i], queries[j]):
                continue
            d, sd = perf.difference(i, j)
            if sd <= 0:
                continue
            if d < 0:
                i, j, d = j, i, -d
            out.append(PairResult(cell=held, budget=budget, winner=_label(queries[i]), other=_label(queries[j]),
                                  probability=normal.cdf(d / sd), predicted_ratio=math.exp(d),
                                  measured_ratio=math.exp(mean[i] - mean[j]), z=d / sd))
    return out


def _log_likelihood(results: list[PairResult], scale: float) -> float:
    total = 0.0
    for r in results:
        p = _NORMAL.cdf(r.z / scale)
        total += math.log(max(p if r.gained else 1.0 - p, 1e-12))
    return total


def scale_for(results: list[PairResult]) -> float:
    """The scale of SCALES under which the pairs' measured outcomes are most likely (1 with fewer
    than MIN_PAIRS pairs: too few to say the model is off)."""
    if len(results) < MIN_PAIRS:
        return 1.0
    return max(SCALES, key=lambda scale: (_log_likelihood(results, scale), -abs(scale - 1.0)))


def fit_scales(predictor, prior: list[Sample]) -> tuple[float, ...]:
    """The scale per budget of SCALED_BUDGETS for a fitted GPPredictor: the pairs of every cell of
    `prior` held out in turn, the predictor conditioned on the other cells (its hyperparameters
    stay: seconds, not a refit per cell)."""
    from advisor.model.evaluation import ShippedFit

    factory = partial(ShippedFit, predictor, prior)
    cache: dict = {}
    return tuple(scale_for(evaluate_pairs(factory, prior, budget, cache=cache)) for budget in SCALED_BUDGETS)


def held_out_calibration(results: list[PairResult]) -> list[PairResult]:
    """The pairs with their probability calibrated by a scale fitted on the other cells' pairs of
    the same budget: the calibration checked on pairs it was not fitted on."""
    scales = {(cell, budget): scale_for([o for o in results if o.cell != cell and o.budget == budget])
              for cell, budget in {(r.cell, r.budget) for r in results}}
    return [replace(r, calibrated=_NORMAL.cdf(r.z / scales[(r.cell, r.budget)])) for r in results]


def _probability(r: PairResult, calibrated: bool) -> float:
    return r.calibrated if calibrated and r.calibrated is not None else r.probability


def summary(results: list[PairResult], calibrated: bool = False) -> list[dict]:
    """Per group of predicted probability (`calibrated`: the held-out calibrated one): pairs, their
    mean probability, the share that measured a gain."""
    rows = []
    for low, high in BINS:
        group = [r for r in results
                 if low <= (p := _probability(r, calibrated)) < high or (high == 1.0 and p == 1.0)]
        if group:
            rows.append({"from": low, "to": high, "pairs": len(group),
                         "mean_probability": statistics.fmean(_probability(r, calibrated) for r in group),
                         "measured_gain": sum(r.gained for r in group) / len(group)})
    return rows


def table(results: list[PairResult]) -> str:
    if not results:
        return "no pair left to predict: the probes measured every candidate compared"
    lines = ["| P(gain) | pairs | mean P | measured a gain | calibrated: pairs | mean P | measured a gain |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    raw = {(row["from"], row["to"]): row for row in summary(results)}
    cal = {(row["from"], row["to"]): row for row in summary(results, calibrated=True)}
    for low, high in BINS:
        cells_of = [f"{row['pairs']} | {row['mean_probability']:.3f} | {row['measured_gain']:.1%}"
                    if (row := rows.get((low, high))) else "0 | - | -" for rows in (raw, cal)]
        lines.append(f"| {low:.2f}-{high:.2f} | {cells_of[0]} | {cells_of[1]} |")
    losses = sorted((r for r in results if max(r.probability, r.calibrated or 0.0) >= 0.9 and not r.gained),
                    key=lambda r: -r.probability)
    if losses:
        lines += ["", "predicted at P >= 0.90 (raw or calibrated) and measured no gain:"]
        lines += [f"  {r.cell} {r.winner} over {r.other}: P {r.probability:.3f}"
                  + (f" (calibrated {r.calibrated:.3f})" if r.calibrated is not None else "")
                  + f", predicted {r.predicted_ratio:.2f}x, measured {r.measured_ratio:.2f}x" for r in losses]
    return "\n".join(lines)
