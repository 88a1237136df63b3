"""Probes of sibling pools (the same descriptor on other hosts of a fleet) as observations for
this pool's model, apart from its own probes.

A pool's own deviation from the lab has the prior variance `deviation` (advisor/model/gp.py
LOCAL_DEVIATION_VARIANCE).  Pools of one chassis, disk model and layout share part of it, what
their hardware does differently from the lab's, and each host adds its own: firmware, wear,
fragmentation, what else runs.  So the deviation of host a at setting x is s(x) + e_a(x), with
var e_a = `between` (the between-host variance) and var s = deviation - between: this pool's
total prior is the same as without a fleet, its own probes are believed as before, and a
sibling's probe moves this pool's prediction only through the shared part, never as if it were
this pool's own measurement.  Without siblings the posterior is exactly `gp.condition`'s.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from advisor.model.dataset import Sample
from advisor.model.features import Observation
from advisor.model.gp import Dist, FittedGP, GPPredictor, Prediction, deviation_kernel, matrix

# The between-host variance of a candidate's log ratio to its baseline, chosen from the lab: the
# one cell the prior measured in three runs (hdd-raidz2x6/postgres, docs/prior.md) varies between
# its runs by 0.019 beyond what the repeats within a run vary (`between_run_variance`, six
# candidates; tests/unit/test_model_siblings.py recomputes it).  Runs of one pool: hosts of one
# model differ at least as much, so this is a lower bound, and a sibling is trusted no more than
# a re-run of the same pool.
BETWEEN_HOST_VARIANCE = 0.019


@dataclass(frozen=True)
class SiblingSample:
    sample: Sample  # its target is a log ratio to the sibling's own baseline, of its own run
    host: str  # which sibling pool measured it (instance and pool): its repeats share that host's deviation


def between_run_variance(prior: list[Sample]) -> tuple[float, int] | None:
    """(the mean over candidates of the variance of a candidate's mean log ratio between runs of
    one cell, less the within-run variance of one run's mean; how many candidates) over the cells
    measured in several runs, or None when no cell was."""
    by: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in prior:
        if not s.obs.baseline:
            by[(s.obs.cell, s.obs.parameter, s.obs.value)][s.obs.run].append(s.y_perf)
    between, within = [], []
    for runs in by.values():
        if len(runs) < 2:
            continue
        means = [statistics.fmean(v) for v in runs.values()]
        between.append(statistics.variance(means))
        repeats = [v for v in runs.values() if len(v) > 1]
        within += [statistics.variance(v) / len(v) for v in repeats]
    if not between:
        return None
    return max(statistics.fmean(between) - (statistics.fmean(within) if within else 0.0), 0.0), len(between)


def condition_with_siblings(fitted: FittedGP, local: list[Observation], y_local: list[float],
                            siblings: list[tuple[Observation, float, str]], queries: list[Observation],
                            deviation: float, between: float = BETWEEN_HOST_VARIANCE) -> Dist:
    """`gp.condition` with the siblings' (observation, target, host) beside this pool's probes."""
    observed = local + [o for o, _, _ in siblings]
    X = matrix(observed + queries)
    mu, C = fitted.predict(X)
    noise = fitted.noise
    baseline = matrix([queries[0].with_candidate("recordsize", "128K")])[0] if queries else X[0]
    between = min(between, deviation)
    hosts = [""] * len(local) + [h for _, _, h in siblings] + [""] * len(queries)
    same_host = np.array([[a == b for b in hosts] for a in hosts], dtype=float)
    S = C - noise * np.eye(len(X)) + deviation_kernel(X, baseline, 1.0) * ((deviation - between) + between * same_host)
    n = len(observed)
    if n == 0:
        return Dist(mu, S, noise)
    y = np.asarray(y_local + [y for _, y, _ in siblings], dtype=float)
    S_oo = S[:n, :n] + noise * np.eye(n)
    S_qo = S[n:, :n]
    L = np.linalg.cholesky(S_oo + 1e-9 * np.eye(n))
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y - mu[:n]))
    V = np.linalg.solve(L, S_qo.T)
    return Dist(mu[n:] + S_qo @ alpha, S[n:, n:] - V.T @ V, noise)


class WithSiblings:
    """A model's `predict(local, queries)` with the siblings' probes beside the pool's own.  A
    model that is not the lab GP (or holds none) predicts without them."""

    def __init__(self, model, siblings: list[SiblingSample], between: float = BETWEEN_HOST_VARIANCE):
        self.model, self.siblings, self.between = model, siblings, between
        self.name = f"{getattr(model, 'name', type(model).__name__)} + {len({s.host for s in siblings})} siblings"

    def _predictor(self) -> GPPredictor | None:
        for candidate in (self.model, getattr(self.model, "fitted", None)):
            if isinstance(candidate, GPPredictor):
                return candidate
        return None

    def predict(self, local: list[Sample], queries: list[Observation]) -> Prediction:
        gp = self._predictor()
        if gp is None or not self.siblings:
            return self.model.predict(local, queries)
        perf_gp, p99_gp = gp.fits_for(queries)
        sib = [(s.sample.obs, s.sample.y_perf, s.host) for s in self.siblings]
        perf = condition_with_siblings(perf_gp, [s.obs for s in local], [s.y_perf for s in local], sib, queries,
                                       gp.deviation, self.between)
        p99 = None
        if p99_gp is not None:
            mine = [s for s in local if s.y_p99 is not None]
            theirs = [(s.sample.obs, s.sample.y_p99, s.host) for s in self.siblings if s.sample.y_p99 is not None]
            p99 = condition_with_siblings(p99_gp, [s.obs for s in mine], [s.y_p99 for s in mine if s.y_p99 is not None],
                                          theirs, queries, gp.deviation, self.between)
        return Prediction(perf, p99, gp.perf_scale(local))
