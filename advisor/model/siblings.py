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

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from advisor.model.dataset import Sample, cells
from advisor.model.features import Observation, settings_key
from advisor.model.gp import Dist, FittedGP, GPPredictor, Prediction, deviation_kernel, matrix

# A sibling's probe is a contrast: a candidate's log ratio to the sibling's own baseline, so the
# host's offset (how fast that host is at all) cancels; what a host adds is the deviation of its
# contrasts, e_a(x) - e_a(b).  The kernel gives it that shape (deviation_kernel: cov(h(x) - h(b),
# h(x') - h(b))): a part shared by all of a sibling's candidates (its baseline's deviation, -h(b))
# plus each candidate's own.  Both constants are estimated from the lab cells measured in several
# runs (`host_contrast`; tests/unit/test_model_siblings.py recomputes them):
# - HOST_CONTRAST_VARIANCE: the variance of one contrast between runs, beyond repeat noise
#   (two hosts' measured effects of a candidate differ by twice that: advisor/fleet/view.py);
# - BETWEEN_HOST_VARIANCE: the kernel's variance whose covariance between the candidates
#   matches the runs' (least squares over the matrix); a candidate far from the default has a
#   contrast variance of twice it, half shared with the sibling's other candidates.
# Runs of one pool: hosts of one model differ at least as much, so both are lower bounds.
HOST_CONTRAST_VARIANCE = 0.019
BETWEEN_HOST_VARIANCE = 0.010


@dataclass(frozen=True)
class SiblingSample:
    sample: Sample  # its target is a log ratio to the sibling's own baseline, of its own run
    host: str  # which sibling pool measured it (instance and pool): its repeats share that host's deviation


@dataclass(frozen=True)
class HostContrast:
    """What the lab's repeated runs say of how much a host moves a contrast."""

    cells: int  # cells measured in several runs
    runs: int  # their runs, together
    candidates: int  # non-default candidates measured in each run, together
    contrast_variance: float  # mean over candidates of a contrast's between-run variance, less repeat noise
    shared_covariance: float  # mean covariance of two candidates' contrasts of one run: the shared part
    between: float  # the kernel variance (deviation_kernel's units) fitted to the covariance matrices
    offset_variance: float  # between-run variance of the baseline's absolute log IOPS: what cancels


def host_contrast(prior: list[Sample]) -> HostContrast | None:
    """The between-run covariance of the contrasts of every cell measured in several runs, or None
    when no cell was.  Per cell: each run's mean contrast per candidate, their covariance across
    runs less each candidate's repeat noise (the variance of a mean of its repeats) on the
    diagonal, compared with deviation_kernel at the candidates (one variance, least squares)."""
    runs_total, candidates, diagonal, off, fit_num, fit_den, offsets = 0, 0, [], [], 0.0, 0.0, []
    found = 0
    for rows in cells(prior).values():
        runs = sorted({s.obs.run for s in rows})
        if len(runs) < 2:
            continue
        by: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        obs: dict[tuple, Observation] = {}
        for s in rows:
            if not s.obs.baseline:
                by[settings_key(s.obs)][s.obs.run].append(s.y_perf)
                obs[settings_key(s.obs)] = s.obs
        keys = sorted(k for k in by if len(by[k]) == len(runs))
        means = np.array([[statistics.fmean(by[k][r]) for k in keys] for r in runs])
        noise = [statistics.fmean(statistics.variance(by[k][r]) / len(by[k][r]) if len(by[k][r]) > 1 else 0.0
                                  for r in runs) for k in keys]
        cov = np.cov(means, rowvar=False) - np.diag(noise)
        X = matrix([obs[k] for k in keys])
        K = deviation_kernel(X, matrix([obs[keys[0]].with_candidate("recordsize", "128K")])[0], 1.0)
        fit_num, fit_den = fit_num + float((cov * K).sum()), fit_den + float((K * K).sum())
        diagonal += list(cov.diagonal())
        off += list(cov[~np.eye(len(keys), dtype=bool)])
        offsets.append(statistics.variance([statistics.fmean(math.log(s.obs.perf) for s in rows
                                                             if s.obs.baseline and s.obs.run == r and s.obs.perf)
                                            for r in runs]))
        found, runs_total, candidates = found + 1, runs_total + len(runs), candidates + len(keys)
    if not found:
        return None
    return HostContrast(found, runs_total, candidates, max(statistics.fmean(diagonal), 0.0), statistics.fmean(off),
                        max(fit_num / fit_den, 0.0), statistics.fmean(offsets))


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
