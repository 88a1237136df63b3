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
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from itertools import combinations
from statistics import NormalDist

from advisor.model.dataset import Sample, cells
from advisor.model.evaluation import _fit, _grid, _label, probe_in_order, twins
from advisor.model.select import settings_key

# the groups of predicted probabilities, the decision's thresholds among their edges
BINS = ((0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 0.95), (0.95, 0.99), (0.99, 1.0))


@dataclass
class PairResult:
    cell: str
    budget: int
    winner: str  # the candidate predicted better ("recordsize=8K")
    other: str
    probability: float  # P(winner beats other) under the model's predictive distribution
    predicted_ratio: float  # expected perf of winner / other
    measured_ratio: float  # mean perf of winner / other, over the cell's repeats

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
                                  measured_ratio=math.exp(mean[i] - mean[j])))
    return out


def summary(results: list[PairResult]) -> list[dict]:
    """Per group of predicted probability: pairs, their mean probability, the share that measured a gain."""
    rows = []
    for low, high in BINS:
        group = [r for r in results if low <= r.probability < high or (high == 1.0 and r.probability == 1.0)]
        if group:
            rows.append({"from": low, "to": high, "pairs": len(group),
                         "mean_probability": statistics.fmean(r.probability for r in group),
                         "measured_gain": sum(r.gained for r in group) / len(group)})
    return rows


def table(results: list[PairResult]) -> str:
    if not results:
        return "no pair left to predict: the probes measured every candidate compared"
    lines = ["| predicted P(gain) | pairs | mean P | measured a gain |", "| --- | --- | --- | --- |"]
    for row in summary(results):
        lines.append(f"| {row['from']:.2f}-{row['to']:.2f} | {row['pairs']} | {row['mean_probability']:.3f} | "
                     f"{row['measured_gain']:.1%} |")
    losses = sorted((r for r in results if r.probability >= 0.9 and not r.gained), key=lambda r: -r.probability)
    if losses:
        lines += ["", "predicted at P >= 0.90 and measured no gain:"]
        lines += [f"  {r.cell} {r.winner} over {r.other}: P {r.probability:.3f}, predicted {r.predicted_ratio:.2f}x, "
                  f"measured {r.measured_ratio:.2f}x" for r in losses]
    return "\n".join(lines)
