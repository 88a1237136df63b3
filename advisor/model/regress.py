"""The regression models: what a setting does to a pool's performance and write p99, with intervals.

Two models share one interface (`fit(prior)`, `predict(local, queries)`), compared by
`zfs-advisor evaluate` (docs/model.md has the numbers):

* `GPModel` (the one the advisor uses): a Gaussian process on the lab prior, kernel
  constant × RBF with one length scale per feature (ARD) + WhiteKernel for the repeat noise,
  hyperparameters by maximum likelihood with a fixed random_state.  This pool's probes are
  then conditioned on exactly, with one more term: the pool's own deviation from the lab, a
  smooth function of the setting (recordsize, compression) that is zero at the ZFS default.
  So a probe of this pool moves the prediction at its setting (and its neighbours) as far as
  its repeats say, whatever the lab did, and the interval narrows as probes arrive — the
  algebra of a GP posterior, not a weight someone picked.
* `QuantileBoost`: gradient boosting with quantile loss (5 %, 50 %, 95 %); this pool's probes
  are added to the training rows with a larger sample weight.

https://scikit-learn.org/stable/modules/gaussian_process.html,
https://scikit-learn.org/stable/auto_examples/ensemble/plot_gradient_boosting_quantile.html

Imports scikit-learn: only loaded when the `model` extra is installed (advisor/model/provider.py).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from advisor.model.dataset import Sample
from advisor.model.features import FEATURES, SETTING_FEATURES, Observation, vector

Z90 = 1.6448536269514722  # a two-sided 90 % interval is mean ± Z90 sd
# The pool's own deviation from the lab (see the module docstring): its prior variance (in
# log-ratio units, 0.03 ≈ a 17 % standard deviation) and length scale (in doublings of the
# recordsize).  Chosen so the lab's leave-one-cell-out intervals cover about 90 %
# (docs/model.md); the GP's fitted kernel carries everything else.
LOCAL_DEVIATION_VARIANCE = 0.03
LOCAL_DEVIATION_LENGTH = 1.5
_SETTING_INDEX = [FEATURES.index(f) for f in SETTING_FEATURES]


@dataclass
class Dist:
    """The posterior of a target at the query points: mean and covariance of the expected value
    (log ratio to the baseline), and the repeat noise one measurement adds."""
    mean: np.ndarray
    cov: np.ndarray
    noise: float

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0, None))

    @property
    def sd_obs(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0, None) + self.noise)

    def interval(self, i: int, measurement: bool = False) -> tuple[float, float]:
        sd = (self.sd_obs if measurement else self.sd)[i]
        return (float(self.mean[i] - Z90 * sd), float(self.mean[i] + Z90 * sd))

    def difference(self, i: int, j: int) -> tuple[float, float]:
        """Mean and standard deviation of target[i] - target[j] (their covariance counted)."""
        var = self.cov[i, i] + self.cov[j, j] - 2 * self.cov[i, j]
        return float(self.mean[i] - self.mean[j]), math.sqrt(max(var, 0.0))


@dataclass
class Prediction:
    perf: Dist
    p99: Dist | None


def matrix(observations: list[Observation]) -> np.ndarray:
    return np.array([vector(o) for o in observations], dtype=float).reshape(len(observations), len(FEATURES))


def _deviation_kernel(X: np.ndarray, baseline: np.ndarray, variance: float = LOCAL_DEVIATION_VARIANCE) -> np.ndarray:
    """cov(h(x) - h(b), h(x') - h(b)) for a smooth h over the setting features, b the default."""
    S = X[:, _SETTING_INDEX]
    b = baseline[_SETTING_INDEX][None, :]

    def rbf(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
        return np.exp(-0.5 * d2 / LOCAL_DEVIATION_LENGTH ** 2)

    kb = rbf(S, b)
    return variance * (rbf(S, S) - kb - kb.T + 1.0)


class GPModel:
    name = "gp"

    def __init__(self, seed: int = 0, restarts: int = 2, deviation: float = LOCAL_DEVIATION_VARIANCE):
        self.seed = seed
        self.restarts = restarts
        self.deviation = deviation
        self._perf: tuple[GaussianProcessRegressor, float, np.ndarray] | None = None
        self._p99: tuple[GaussianProcessRegressor, float, np.ndarray] | None = None

    def _fit_one(self, X: np.ndarray, y: np.ndarray) -> tuple[GaussianProcessRegressor, float, np.ndarray]:
        keep = X.std(axis=0) > 1e-9  # a feature the lab never varied cannot be learnt
        d = int(keep.sum())
        kernel = (ConstantKernel(0.1, (1e-3, 10.0)) * RBF(np.ones(d), (0.1, 100.0))
                  + WhiteKernel(0.01, (1e-5, 0.5)))
        gp = GaussianProcessRegressor(kernel, n_restarts_optimizer=self.restarts, random_state=self.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp.fit(X[:, keep], y)
        return gp, float(gp.kernel_.k2.noise_level), keep

    def fit(self, prior: list[Sample]) -> GPModel:
        X = matrix([s.obs for s in prior])
        self._perf = self._fit_one(X, np.array([s.y_perf for s in prior]))
        with_p99 = [s for s in prior if s.y_p99 is not None]
        if len(with_p99) >= 5:
            self._p99 = self._fit_one(matrix([s.obs for s in with_p99]), np.array([s.y_p99 for s in with_p99]))
        return self

    @property
    def kernels(self) -> dict[str, str]:
        return {name: str(m[0].kernel_) for name, m in (("perf", self._perf), ("write_p99", self._p99)) if m}

    def predict(self, local: list[Sample], queries: list[Observation]) -> Prediction:
        assert self._perf is not None, "fit first"
        perf = _condition(self._perf, [s.obs for s in local], [s.y_perf for s in local], queries, self.deviation)
        p99 = None
        if self._p99 is not None:
            loc = [s for s in local if s.y_p99 is not None]
            p99 = _condition(self._p99, [s.obs for s in loc], [s.y_p99 for s in loc], queries,  # type: ignore[misc]
                             self.deviation)
        return Prediction(perf, p99)


def _condition(fitted: tuple[GaussianProcessRegressor, float, np.ndarray], local: list[Observation],
               y_local: list[float], queries: list[Observation], deviation: float = LOCAL_DEVIATION_VARIANCE) -> Dist:
    gp, noise, keep = fitted
    X = matrix(local + queries)
    mu, C = gp.predict(X[:, keep], return_cov=True)  # the WhiteKernel puts the noise on the diagonal
    baseline = matrix([queries[0].with_candidate("recordsize", "128K")])[0] if queries else X[0]
    S = C - noise * np.eye(len(X)) + _deviation_kernel(X, baseline, deviation)
    n = len(local)
    if n == 0:
        return Dist(mu, S, noise)
    S_ll = S[:n, :n] + noise * np.eye(n)
    S_ql = S[n:, :n]
    L = np.linalg.cholesky(S_ll + 1e-9 * np.eye(n))
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, np.asarray(y_local) - mu[:n]))
    V = np.linalg.solve(L, S_ql.T)
    return Dist(mu[n:] + S_ql @ alpha, S[n:, n:] - V.T @ V, noise)


class QuantileBoost:
    """Quantile gradient boosting; this pool's probes weigh LOCAL_WEIGHT lab rows each."""
    name = "quantile-gb"
    LOCAL_WEIGHT = 5.0
    ALPHAS = (0.05, 0.5, 0.95)

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._prior: list[Sample] = []

    def fit(self, prior: list[Sample]) -> QuantileBoost:
        self._prior = list(prior)
        self._fitted: dict[tuple, list] = {}
        return self

    def _models(self, rows: list[Sample], target: str) -> list[Any] | None:
        rows = [s for s in rows if getattr(s, target) is not None]
        if len(rows) < 5:
            return None
        X = matrix([s.obs for s in rows])
        y = np.array([getattr(s, target) for s in rows])
        w = np.array([self.LOCAL_WEIGHT if s.obs.cell.startswith("local:") else 1.0 for s in rows])
        # imported here: sklearn.ensemble costs the service 10 MB resident, and the default model is the GP
        from sklearn.ensemble import GradientBoostingRegressor

        return [GradientBoostingRegressor(loss="quantile", alpha=a, n_estimators=150, max_depth=3,
                                          learning_rate=0.05, min_samples_leaf=3, subsample=0.8,
                                          random_state=self.seed).fit(X, y, sample_weight=w) for a in self.ALPHAS]

    def _dist(self, models: list[Any], queries: list[Observation]) -> Dist:
        X = matrix(queries)
        lo, mid, hi = (m.predict(X) for m in models)
        lo, hi = np.minimum(lo, mid), np.maximum(hi, mid)
        sd = (hi - lo) / (2 * Z90)
        return Dist(mid, np.diag(sd ** 2), 0.0)

    def predict(self, local: list[Sample], queries: list[Observation]) -> Prediction:
        rows = self._prior + [Sample(_as_local(s.obs), s.y_perf, s.y_p99) for s in local]
        perf = self._models(rows, "y_perf")
        assert perf is not None, "too few rows to fit"
        p99 = self._models(rows, "y_p99")
        return Prediction(self._dist(perf, queries), self._dist(p99, queries) if p99 else None)


def _as_local(o: Observation) -> Observation:
    from dataclasses import replace
    return o if o.cell.startswith("local:") else replace(o, cell="local:" + o.cell)


MODELS = {"gp": GPModel, "quantile-gb": QuantileBoost}
