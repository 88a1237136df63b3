"""The fitted Gaussian process as plain numbers, and its predictions with numpy alone.

scikit-learn fits the GP's hyperparameters (advisor/model/regress.py); what a prediction needs
afterwards is a handful of arrays: the kernel's constant, length scales and noise level, the
training inputs, and K⁻¹y.  They are written as JSON beside the prior they were fitted on
(advisor/model/fitted.py), so the service predicts without importing scikit-learn or scipy
(about 90 MB resident, docs/model.md) and without a fit at start-up, and nothing is pickled.

The algebra is scikit-learn's GaussianProcessRegressor.predict(return_cov=True) with
normalize_y=False: mean K*·α, covariance K** − V'V with V = L⁻¹K*' and L the Cholesky factor
of K + 1e-10·I, the kernel being constant × RBF (one length scale per feature) + white noise;
plus, where the fit has one, a linear mean x·β fitted before the GP (which models what it leaves).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.evidence.interval import Z90
from advisor.model.dataset import Sample
from advisor.model.features import FEATURES, SETTING_FEATURES, Observation, settings_key, vector

# The pool's own deviation from the lab (advisor/model/regress.py): its prior variance (in
# log-ratio units, 0.06 ≈ a 25 % standard deviation) and length scale (in doublings of the
# recordsize).  The variance was chosen on the lab's leave-one-cell-out evaluation, so that
# a 90 % interval for a measurement covers about 90 % of the held-out repeats (0.03 covered
# 87-88 % on the 240 rows of 15 cells, 0.06 covers 88-91 %; docs/model.md); the GP's fitted
# kernel carries everything else.
LOCAL_DEVIATION_VARIANCE = 0.06
LOCAL_DEVIATION_LENGTH = 1.5
JITTER = 1e-10  # GaussianProcessRegressor's default `alpha`, added to the training diagonal
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
    # What the standard deviation of a perf difference is multiplied by where an answer reads it as
    # a 90 % interval or P(gain): the calibration fitted on held-out lab pairs for this many probed
    # candidates (advisor/model/calibration.py).  The pick and the probe order read the raw Dist.
    perf_scale: float = 1.0


def matrix(observations: list[Observation]) -> np.ndarray:
    return np.array([vector(o) for o in observations], dtype=float).reshape(len(observations), len(FEATURES))


@dataclass
class FittedGP:
    """One target's GP after the fit: constant × RBF(length_scales) + WhiteKernel(noise) over
    the features in `keep` (a feature the lab never varied is left out), trained on X_train, on
    top of the linear mean `linear` (β over all FEATURES, or None)."""
    constant: float
    length_scales: np.ndarray
    noise: float
    keep: np.ndarray
    X_train: np.ndarray
    alpha: np.ndarray
    linear: np.ndarray | None = None

    def mean_of(self, X: np.ndarray) -> np.ndarray:
        return X @ self.linear if self.linear is not None else np.zeros(len(X))

    def __post_init__(self) -> None:
        # L⁻¹ of the training covariance's Cholesky factor, at this GP's first prediction: the
        # shipped model holds 12 GPs and an answer about one workload uses 2 of them, so
        # factorising all at load was most of the model's start-up time (docs/performance.md)
        self._L: np.ndarray | None = None
        self._L_inv: np.ndarray | None = None

    def factor(self) -> np.ndarray:
        """L, the Cholesky factor of the training rows' covariance (noise included), computed once."""
        if self._L is None:
            K = self._k(self.X_train, self.X_train) + (self.noise + JITTER) * np.eye(len(self.X_train))
            self._L = np.linalg.cholesky(K)
        return self._L

    def _inverse_factor(self) -> np.ndarray:
        """L⁻¹, computed once: a prediction is then a product, O(n²) per query point, where a
        solve against L factorised L again, O(n³) per prediction (588 lab rows: 16 % of an answer)."""
        if self._L_inv is None:
            self._L_inv = np.linalg.inv(self.factor())
        return self._L_inv

    def _k(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        a, b = A / self.length_scales, B / self.length_scales
        d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)  # as scipy's cdist: exact on the diagonal
        return self.constant * np.exp(-0.5 * d2)

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance at the rows of X (all features; the kept ones are selected here),
        the white noise on the diagonal as scikit-learn puts it."""
        Xq = X[:, self.keep]
        K_trans = self._k(Xq, self.X_train)
        V = self._inverse_factor() @ K_trans.T
        cov = self._k(Xq, Xq) + self.noise * np.eye(len(Xq)) - V.T @ V
        return self.mean_of(X) + K_trans @ self.alpha, cov

    def to_json(self) -> dict[str, Any]:
        linear = ({FEATURES[i]: float(self.linear[i]) for i in np.flatnonzero(self.linear)}
                  if self.linear is not None else {})
        return {"constant": self.constant, "length_scales": self.length_scales.tolist(), "noise": self.noise,
                "keep": [FEATURES[i] for i in np.flatnonzero(self.keep)], "linear": linear,
                "X_train": self.X_train.tolist(), "alpha": self.alpha.tolist()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FittedGP:
        unknown = [f for f in d["keep"] if f not in FEATURES]
        linear_of = d.get("linear") or {}
        unknown += [f for f in linear_of if f not in FEATURES]
        if unknown:
            raise ValueError(f"features {unknown} are not this version's ({', '.join(FEATURES)})")
        keep = np.array([f in d["keep"] for f in FEATURES])
        linear = np.array([float(linear_of.get(f, 0.0)) for f in FEATURES]) if linear_of else None
        X = np.array(d["X_train"], dtype=float).reshape(-1, int(keep.sum()))
        alpha = np.array(d["alpha"], dtype=float)
        scales = np.array(d["length_scales"], dtype=float)
        if len(alpha) != len(X) or len(scales) != X.shape[1]:
            raise ValueError("X_train, alpha and length_scales do not agree in size")
        return cls(float(d["constant"]), scales, float(d["noise"]), keep, X, alpha, linear)


def deviation_kernel(X: np.ndarray, baseline: np.ndarray, variance: float = LOCAL_DEVIATION_VARIANCE) -> np.ndarray:
    """cov(h(x) - h(b), h(x') - h(b)) for a smooth h over the setting features, b the default."""
    S = X[:, _SETTING_INDEX]
    b = baseline[_SETTING_INDEX][None, :]

    def rbf(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
        return np.exp(-0.5 * d2 / LOCAL_DEVIATION_LENGTH ** 2)

    kb = rbf(S, b)
    return variance * (rbf(S, S) - kb - kb.T + 1.0)


def condition(fitted: FittedGP, local: list[Observation], y_local: list[float], queries: list[Observation],
              deviation: float = LOCAL_DEVIATION_VARIANCE) -> Dist:
    """The lab GP at the queries, conditioned on this pool's probes (with its own deviation)."""
    X = matrix(local + queries)
    mu, C = fitted.predict(X)
    noise = fitted.noise
    baseline = matrix([queries[0].with_candidate("recordsize", "128K")])[0] if queries else X[0]
    S = C - noise * np.eye(len(X)) + deviation_kernel(X, baseline, deviation)
    n = len(local)
    if n == 0:
        return Dist(mu, S, noise)
    S_ll = S[:n, :n] + noise * np.eye(n)
    S_ql = S[n:, :n]
    L = np.linalg.cholesky(S_ll + 1e-9 * np.eye(n))
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, np.asarray(y_local) - mu[:n]))
    V = np.linalg.solve(L, S_ql.T)
    return Dist(mu[n:] + S_ql @ alpha, S[n:, n:] - V.T @ V, noise)


def single_workload(queries: list[Observation]) -> str | None:
    """The workload all the queries are of, or None when they mix workloads."""
    workloads = {q.workload for q in queries}
    return next(iter(workloads)) if len(workloads) == 1 else None


def conditioned_on(fitted: FittedGP, rows: np.ndarray) -> FittedGP:
    """The same GP (constant, length scales, noise: the hyperparameters fitted on every row)
    conditioned on the training rows selected by the boolean mask `rows` alone.  The targets are
    recovered from the fit itself: (K + noise I) α = y."""
    K = fitted._k(fitted.X_train, fitted.X_train) + (fitted.noise + JITTER) * np.eye(len(fitted.X_train))
    y = (K @ fitted.alpha)[rows]
    X = fitted.X_train[rows]
    K_rows = fitted._k(X, X) + (fitted.noise + JITTER) * np.eye(len(X))
    return FittedGP(fitted.constant, fitted.length_scales, fitted.noise, fitted.keep, X, np.linalg.solve(K_rows, y),
                    fitted.linear)


class GPPredictor:
    """Predictions of the fitted lab GP (write p99 when the lab had enough rows of it),
    conditioned on this pool's probes: the `predict(local, queries)` of every model.

    For a workload the lab measured on several layouts, the GP is conditioned on that workload's
    lab rows alone (`by_workload`: the same hyperparameters, fitted on every row): the other
    workloads teach the kernel how settings and pools vary, but their own best values pull a
    prediction the wrong way (docs/model.md: MySQL's 16K pulled PostgreSQL's towards 16K)."""
    name = "gp"

    def __init__(self, perf: FittedGP, p99: FittedGP | None, deviation: float = LOCAL_DEVIATION_VARIANCE,
                 by_workload: dict[str, tuple[FittedGP, FittedGP | None]] | None = None,
                 calibration: tuple[float, ...] = ()):
        self.perf, self.p99, self.deviation = perf, p99, deviation
        self.by_workload = by_workload or {}
        # the perf sd's scale for 0, 1, 2 or more candidates this pool has probed (the last for
        # more); (): none fitted (advisor/model/calibration.py)
        self.calibration = tuple(calibration)

    def with_deviation(self, deviation: float) -> GPPredictor:
        return GPPredictor(self.perf, self.p99, deviation, self.by_workload, self.calibration)

    def perf_scale(self, local: list[Sample]) -> float:
        if not self.calibration:
            return 1.0
        probed = len({settings_key(s.obs) for s in local})
        return self.calibration[min(probed, len(self.calibration) - 1)]

    def fits_for(self, queries: list[Observation]) -> tuple[FittedGP, FittedGP | None]:
        """(perf, write p99) GPs for the queries: their workload's, when they share one that has its own."""
        own = self.by_workload.get(single_workload(queries) or "")
        return own if own is not None else (self.perf, self.p99)

    def predict(self, local: list[Sample], queries: list[Observation]) -> Prediction:
        perf_gp, p99_gp = self.fits_for(queries)
        perf = condition(perf_gp, [s.obs for s in local], [s.y_perf for s in local], queries, self.deviation)
        p99 = None
        if p99_gp is not None:
            loc = [(s.obs, s.y_p99) for s in local if s.y_p99 is not None]
            p99 = condition(p99_gp, [o for o, _ in loc], [y for _, y in loc], queries, self.deviation)
        return Prediction(perf, p99, self.perf_scale(local))
