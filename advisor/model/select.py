"""Which candidate to probe next, and which to recommend, from a model's posterior.

* `next_candidates`: expected improvement (EI) over the best candidate probed so far, times the
  probability that the candidate's write p99 stays within WRITE_P99_TOLERANCE of the default's
  (the rule of advisor/engine/measured.py), greedily for a batch ("kriging believer": a chosen
  candidate counts as measured at its predicted mean while the next is chosen).  The baseline
  comes first: every other number is a ratio to it.
* `choose` (and `pick`, which predicts first): the candidate with the best lower confidence bound
  of its effect against the default whose write p99 ratio is within the tolerance at an upper
  confidence bound (the same CAUTION standard deviations);
  with LEAP set, a candidate the pool has not probed displaces the best it has probed only
  when predicted better by LEAP standard deviations of their difference (evaluated, off).

Jones, Schonlau & Welch (1998), "Efficient Global Optimization of Expensive Black-Box Functions";
Gardner et al. (2014), "Bayesian Optimization with Inequality Constraints".
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from advisor.engine.measured import WRITE_P99_TOLERANCE
from advisor.model.dataset import Sample
from advisor.model.features import Observation, settings_key

if TYPE_CHECKING:  # gp.py needs numpy, which the service without the model does not import
    from advisor.model.gp import Prediction

LOG_P99_LIMIT = math.log(WRITE_P99_TOLERANCE)
# How many standard deviations of its predicted effect a candidate must clear to be picked over
# the default.  Plain leave-one-cell-out on the first 10 lab cells scores 0 best (budget 2: worst
# 84.9 % against 70.6 %), but choosing it that way does not carry over: with the choice made
# inside each fold (`zfs-advisor evaluate --nested-caution 0,0.25,0.5,1,1.645`) the held-out
# cells do no better than with 0.5 at budget 2 and worse at budget 1 (docs/model.md), so it stays.
CAUTION = 0.5
# How many standard deviations of their difference an unprobed candidate must be predicted
# better by to displace the best candidate this pool has probed (-inf: no such check, the pick
# above alone; inf: probed candidates only).  Evaluated on the 25 cells of the 512 MiB prior
# (`zfs-advisor evaluate --models gp --budget 1,2,3 --leap=-inf,0,1,inf`, model version 4,
# docs/model.md): at 2 and 3 probes no value changes a pick; with the baseline alone 1 lowers
# the mean pick from 94.8 % to 90.1 % of the oracle and inf to 69.5 %.  So it stays off.
LEAP = -math.inf


class Model(Protocol):
    def predict(self, local: list[Sample], queries: list[Observation]) -> Prediction: ...


def _phi(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _Phi(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def expected_improvement(mean: float, sd: float, best: float) -> float:
    if sd <= 1e-12:
        return max(mean - best, 0.0)
    z = (mean - best) / sd
    return (mean - best) * _Phi(z) + sd * _phi(z)


def _p99_vs_base(prediction, i: int, base: int | None) -> tuple[float, float]:
    """Mean and sd of log(write p99 / the default's) at candidate i; `base`: the default's index
    in the same prediction (None: the targets' own baseline)."""
    if base is None:
        return float(prediction.p99.mean[i]), float(prediction.p99.sd[i])
    return prediction.p99.difference(i, base)


def feasible_probability(prediction, i: int, base: int | None = None) -> float:
    if prediction.p99 is None:
        return 1.0
    mean, sd = _p99_vs_base(prediction, i, base)
    return _Phi((LOG_P99_LIMIT - mean) / sd) if sd > 1e-12 else float(mean <= LOG_P99_LIMIT)


def _feasible(prediction, i: int, base: int | None = None, caution: float = 0.0) -> bool:
    """Whether candidate i's write p99, `caution` standard deviations above its predicted mean,
    stays within the tolerance of the default's."""
    if prediction.p99 is None:
        return True
    mean, sd = _p99_vs_base(prediction, i, base)
    return mean + caution * sd <= LOG_P99_LIMIT


def feasible(prediction, i: int, base: int | None = None, caution: float | None = None) -> bool:
    """The pick's test of write p99: with the pick's caution, as an upper bound of the latency
    (the gain is judged by a lower bound).  A mean just inside the tolerance is not enough: the
    p99 GP is uncertain (about 0.3-0.6 in log ratio), and a change past the tolerance costs more
    than the gain it came with (docs/model.md, "Version 11")."""
    return _feasible(prediction, i, base, CAUTION if caution is None else caution)


def _base_index(candidates: list[Observation]) -> int | None:
    return next((i for i, c in enumerate(candidates) if c.baseline), None)


def pick_score(prediction, i: int, base: int | None, caution: float | None = None) -> float:
    """A lower confidence bound of the candidate's effect against the default: its predicted
    mean less `caution` standard deviations of the difference (the default scores 0)."""
    caution = CAUTION if caution is None else caution
    if base is None:
        return float(prediction.perf.mean[i]) - caution * float(prediction.perf.sd[i])
    mean, sd = prediction.perf.difference(i, base)
    return mean - caution * sd


def choose(prediction, candidates: list[Observation], probed: set[tuple], caution: float | None = None,
           leap: float | None = None) -> int:
    """Index of the candidate to recommend from `prediction` (of `candidates`); `probed`: the
    settings (`settings_key`) this pool has measured."""
    leap = LEAP if leap is None else leap
    base = _base_index(candidates)
    order = sorted(range(len(candidates)), key=lambda i: -pick_score(prediction, i, base, caution))
    within = [i for i in order if feasible(prediction, i, base, caution)]
    chosen = within[0] if within else order[0]
    if leap == -math.inf or settings_key(candidates[chosen]) in probed:
        return chosen
    best_probed = next((i for i in within if settings_key(candidates[i]) in probed), None)
    if best_probed is None:
        return chosen
    if leap == math.inf:
        return best_probed
    mean, sd = prediction.perf.difference(chosen, best_probed)
    return chosen if mean - leap * sd > 0 else best_probed


def pick(model: Model, local: list[Sample], candidates: list[Observation],
         caution: float | None = None, leap: float | None = None) -> tuple[int, Prediction]:
    """(index of the candidate to recommend, the posterior it was chosen from)."""
    prediction = model.predict(local, candidates)
    probed = {settings_key(s.obs) for s in local}
    return choose(prediction, candidates, probed, caution, leap), prediction


def next_candidates(model: Model, local: list[Sample], candidates: list[Observation], budget: int,
                    reference: Observation | None = None) -> list[Observation]:
    """Up to `budget` candidates to probe next (fewer when all are probed); `local`: this pool's
    probe results so far, as samples (advisor/model/dataset.py).  `reference`: the value a dataset
    holds now (one of `candidates`), measured first in place of the default: a run of it and the
    candidates after it measures the change that dataset would make, within one run."""
    probed = {s.obs.candidate for s in local}
    todo = [c for c in candidates if c.candidate not in probed]
    default = next((c for c in candidates if c.baseline), None)
    chosen: list[Observation] = []
    believed = list(local)
    ref = next((c for c in todo if reference is not None and settings_key(c) == settings_key(reference)), None)
    if budget > 0 and ref is not None and not ref.baseline:
        # believed at its predicted mean: what the run measures is a ratio to it, not to the default
        prediction = model.predict(believed, [ref])
        p99 = float(prediction.p99.mean[0]) if prediction.p99 is not None else None
        chosen.append(ref)
        # a ratio to the dataset's value says what changing that one parameter does: the others
        # are measured against their default in a run of their own
        todo = [c for c in todo if c is not ref and c.parameter == ref.parameter]
        believed.append(Sample(replace(ref, repeat=-1), float(prediction.perf.mean[0]), p99))
    elif budget > 0 and not any(s.obs.baseline for s in local):
        baseline = next((c for c in todo if c.baseline), None)
        if baseline is not None:
            chosen.append(baseline)
            todo.remove(baseline)
            believed.append(Sample(replace(baseline, repeat=-1), 0.0, 0.0))
    while len(chosen) < budget and todo:
        # the default is predicted with them: write p99 is judged against it
        extra = [default] if default is not None and default not in todo else []
        prediction = model.predict(believed, todo + extra)
        base = len(todo) if extra else _base_index(todo)
        seen_obs = [s.obs for s in believed] + extra
        seen = model.predict(believed, seen_obs) if believed else None
        seen_base = len(believed) if extra else None
        best = max((float(seen.perf.mean[i]) for i in range(len(believed)) if _feasible(seen, i, seen_base)),
                   default=0.0) if seen is not None else 0.0
        scores = [expected_improvement(float(prediction.perf.mean[i]), float(prediction.perf.sd[i]), best)
                  * feasible_probability(prediction, i, base) for i in range(len(todo))]
        i = max(range(len(todo)), key=lambda k: (scores[k], -k))
        c = todo.pop(i)
        chosen.append(c)
        p99 = float(prediction.p99.mean[i]) if prediction.p99 is not None else None
        believed.append(Sample(replace(c, repeat=-1), float(prediction.perf.mean[i]), p99))
    return chosen
