"""The regression models: what a setting does to a pool's performance and write p99, with intervals.

Two models share one interface (`fit(prior)`, `predict(local, queries)`), compared by
`zfs-advisor evaluate` (docs/model.md has the numbers):

* `GPModel` (the one the advisor uses): a Gaussian process on the lab prior, kernel
  constant × RBF with one length scale per feature (ARD) + WhiteKernel for the repeat noise,
  hyperparameters by maximum likelihood with a fixed random_state, on what a linear mean over
  the physics of a record (least squares, performance only: the raidz geometry on HDDs, the
  records per I/O on SSDs) leaves.  This pool's probes are
  then conditioned on exactly, with one more term: the pool's own deviation from the lab, a
  smooth function of the setting (recordsize, compression) that is zero at the ZFS default.
  So a probe of this pool moves the prediction at its setting (and its neighbours) as far as
  its repeats say, whatever the lab did, and the interval narrows as probes arrive — the
  algebra of a GP posterior, not a weight someone picked.
* `QuantileBoost`: gradient boosting with quantile loss (5 %, 50 %, 95 %); this pool's probes
  are added to the training rows with a larger sample weight.

https://scikit-learn.org/stable/modules/gaussian_process.html,
https://scikit-learn.org/stable/auto_examples/ensemble/plot_gradient_boosting_quantile.html

Imports scikit-learn (the `model` extra): fitting only.  A fitted GP predicts with numpy alone
(advisor/model/gp.py); the service loads the fit shipped beside the prior (advisor/model/fitted.py).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from advisor.model.dataset import Sample
from advisor.model.features import FEATURES, Observation
from advisor.model.gp import (
    LOCAL_DEVIATION_VARIANCE,
    Z90,
    Dist,
    FittedGP,
    GPPredictor,
    Prediction,
    conditioned_on,
    matrix,
    single_workload,
)


class GPModel:
    name = "gp"

    # Performance only: a linear mean over these features, fitted by least squares before the GP,
    # which models what it leaves.  The busiest disk's reads bound a disk-bound pool's IOPS, and
    # each disk a record lies on costs a seek (both on HDDs, against the default recordsize on the
    # same pool, so 0 where the targets are); on an SSD the records an application I/O touches are
    # the I/Os (model version 8: held out, the SSD mirror's PostgreSQL was predicted at 4K as at 8K,
    # and 8K was its best by 29 %).  A linear term carries the direction of the physics to a pool
    # wider than any the lab measured, which an RBF kernel forgets (docs/model.md).
    linear_features: tuple[str, ...] = ("log2_hdd_busiest_disk_vs_default", "log2_ssd_records_per_io",
                                        "log2_hdd_disks_per_record_vs_default")
    # Features the performance kernel leaves out.  The raw vdev width (version 7): maximum
    # likelihood gave it a length scale of 0.21 doublings on the 35-cell prior, so the GP told the
    # lab's layouts apart by it and predicted a held-out pool from little but its own baseline.  The
    # raidz geometry (version 10): in the kernel, the disks one record lies on and the busiest disk's
    # reads grow with the width, and a raidz wider than the lab's lay beyond the values the kernel
    # had seen; held out of the fit, the raidz1 of eight's PostgreSQL kept 8K (81 % of its best) and
    # its file server 128K after two probes (73 %).  They are in the linear mean instead.
    kernel_excludes: tuple[str, ...] = ("log2_vdev_width", "log2_ssd_records_per_io", "log2_hdd_disks_per_record",
                                        "log2_hdd_disks_per_record_vs_default", "log2_hdd_busiest_disk_vs_default")
    # The write-p99 GP has no linear mean, so its kernel keeps the geometry (as in version 9); None:
    # the same features as the performance kernel.
    p99_kernel_excludes: tuple[str, ...] | None = ("log2_vdev_width", "log2_ssd_records_per_io",
                                                   "log2_hdd_disks_per_record_vs_default")
    # The shortest length scale a kernel may fit (model version 9, 2026-11-29).  With the raidz1 of
    # six in the prior, maximum likelihood put the HDD disks-per-record feature at the old bound of
    # 0.1, a third of the smallest step between its values (log2 of 5/4 disks): neighbouring disk
    # counts were uncorrelated, a lookup by layout that a held-out pool cannot use.  At 0.5 the
    # leave-one-cell-out answers lost nothing and the worst at two probes stayed 93.1 % (docs/model.md;
    # chosen after seeing that evaluation).
    min_length_scale = 0.5

    def __init__(self, seed: int = 0, restarts: int = 2, deviation: float = LOCAL_DEVIATION_VARIANCE,
                 calibrate: bool = False):
        self.seed = seed
        self.restarts = restarts
        self.deviation = deviation
        # also fit the calibration of P(gain) on the prior's held-out pairs (advisor/model/calibration.py):
        # what the service's fit does; the pick's evaluation does not read it, and skips it
        self.calibrate = calibrate
        self.kernels: dict[str, str] = {}
        self.fitted: GPPredictor | None = None

    def _fit_one(self, X: np.ndarray, y: np.ndarray, linear_features: tuple[str, ...] = (),
                 excludes: tuple[str, ...] = ()) -> tuple[FittedGP, str]:
        linear = None
        if linear_features:  # no intercept: the targets are 0 at the default, and so are these features
            cols = [FEATURES.index(f) for f in linear_features]
            linear = np.zeros(X.shape[1])
            linear[cols] = np.linalg.lstsq(X[:, cols], y, rcond=None)[0]
            y = y - X @ linear
        keep = X.std(axis=0) > 1e-9  # a feature the lab never varied cannot be learnt
        keep &= np.array([f not in excludes for f in FEATURES])
        d = int(keep.sum())
        kernel = (ConstantKernel(0.1, (1e-3, 10.0)) * RBF(np.ones(d), (self.min_length_scale, 100.0))
                  + WhiteKernel(0.01, (1e-5, 0.5)))
        gp = GaussianProcessRegressor(kernel, n_restarts_optimizer=self.restarts, random_state=self.seed)
        with warnings.catch_warnings():  # a length scale at its bound: that feature does not matter
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp.fit(X[:, keep], y)
        k = gp.kernel_
        fitted = FittedGP(constant=float(k.k1.k1.constant_value), length_scales=np.atleast_1d(k.k1.k2.length_scale),
                          noise=float(k.k2.noise_level), keep=keep, X_train=X[:, keep].copy(),
                          alpha=np.asarray(gp.alpha_, dtype=float).ravel(), linear=linear)
        return fitted, str(k)

    def fit(self, prior: list[Sample]) -> GPModel:
        X = matrix([s.obs for s in prior])
        perf, self.kernels["perf"] = self._fit_one(X, np.array([s.y_perf for s in prior]), self.linear_features,
                                                   self.kernel_excludes)
        p99 = None
        with_p99 = [s for s in prior if s.y_p99 is not None]
        if len(with_p99) >= 5:
            excludes = self.kernel_excludes if self.p99_kernel_excludes is None else self.p99_kernel_excludes
            p99, self.kernels["write_p99"] = self._fit_one(matrix([s.obs for s in with_p99]),
                                                           np.array([s.y_p99 for s in with_p99]), excludes=excludes)
        self.fitted = GPPredictor(perf, p99, self.deviation, by_workload(prior, perf, p99, with_p99))
        if self.calibrate:
            from advisor.model.calibration import fit_scales

            self.fitted.calibration = fit_scales(self.fitted, prior)
        return self

    def predict(self, local: list[Sample], queries: list[Observation]) -> Prediction:
        assert self.fitted is not None, "fit first"
        return self.fitted.predict(local, queries)


# A workload gets its own conditioning (GPPredictor.by_workload) when the lab measured it on this
# many layouts: with one, a held-out pool of that workload would be predicted from nothing.
MIN_WORKLOAD_CELLS = 2


def measured_workloads(prior: list[Sample]) -> list[str]:
    """The workloads the lab measured on MIN_WORKLOAD_CELLS layouts or more."""
    cells: dict[str, set[str]] = {}
    for s in prior:
        cells.setdefault(s.obs.workload, set()).add(s.obs.cell)
    return sorted(w for w, c in cells.items() if len(c) >= MIN_WORKLOAD_CELLS)


def by_workload(prior: list[Sample], perf: FittedGP, p99: FittedGP | None,
                with_p99: list[Sample]) -> dict[str, tuple[FittedGP, FittedGP | None]]:
    """Each workload's rows of the fit, for the workloads the lab measured on MIN_WORKLOAD_CELLS
    layouts or more (the rows of `perf` are `prior`, those of `p99` are `with_p99`)."""
    out: dict[str, tuple[FittedGP, FittedGP | None]] = {}
    names = np.array([s.obs.workload for s in prior])
    names_p99 = np.array([s.obs.workload for s in with_p99])
    for workload in measured_workloads(prior):
        mine_p99 = None
        if p99 is not None and (names_p99 == workload).sum() >= 5:
            mine_p99 = conditioned_on(p99, names_p99 == workload)
        out[workload] = (conditioned_on(perf, names == workload), mine_p99)
    return out


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


class WorkloadGP:
    """One GP per workload the prior measured on MIN_WORKLOAD_CELLS layouts or more, fitted on that
    workload's rows alone (hyperparameters included), and the GP of all rows for any other
    workload.  Evaluated beside the shipped GP, which fits its hyperparameters on every row and
    conditions each workload on its own rows (docs/model.md: this one picks about as well, and its
    intervals cover less); not what the service uses."""
    name = "gp-workload"

    def __init__(self, seed: int = 0, restarts: int = 2, deviation: float = LOCAL_DEVIATION_VARIANCE):
        self.seed, self.restarts, self.deviation = seed, restarts, deviation
        self.by_workload: dict[str, GPModel] = {}
        self.overall: GPModel | None = None

    def fit(self, prior: list[Sample]) -> WorkloadGP:
        self.overall = GPModel(self.seed, self.restarts, self.deviation).fit(prior)
        for workload in measured_workloads(prior):
            rows = [s for s in prior if s.obs.workload == workload]
            self.by_workload[workload] = GPModel(self.seed, self.restarts, self.deviation).fit(rows)
        return self

    def predict(self, local: list[Sample], queries: list[Observation]) -> Prediction:
        assert self.overall is not None, "fit first"
        model = self.by_workload.get(single_workload(queries) or "")
        return (model or self.overall).predict(local, queries)


class GPVersion9(GPModel):
    """Model version 9: the raidz geometry (disks per record, the busiest disk's reads) in both
    kernels, the busiest disk and an SSD's records per I/O in the linear mean; evaluated beside the
    shipped one (docs/model.md), not what the service uses."""
    name = "gp-v9"
    linear_features: tuple[str, ...] = ("log2_hdd_busiest_disk_vs_default", "log2_ssd_records_per_io")
    kernel_excludes: tuple[str, ...] = ("log2_vdev_width", "log2_ssd_records_per_io",
                                        "log2_hdd_disks_per_record_vs_default")
    p99_kernel_excludes = None


class GPHddLinearMean(GPVersion9):
    """Model version 7: the linear mean over the HDD busiest disk's reads alone; evaluated beside
    the shipped one (docs/model.md), not what the service uses."""
    name = "gp-hdd-linear-mean"
    linear_features: tuple[str, ...] = ("log2_hdd_busiest_disk_vs_default",)
    min_length_scale = 0.1  # as versions 5 to 8 were fitted and evaluated


class GPWithWidth(GPHddLinearMean):
    """Model version 6: version 7 with the raw vdev width in its kernels; evaluated beside the
    shipped one (docs/model.md), not what the service uses."""
    name = "gp-with-width"
    kernel_excludes = ("log2_ssd_records_per_io", "log2_hdd_disks_per_record_vs_default")


class GPNoLinearMean(GPWithWidth):
    """Model version 5: version 6 without the linear mean; evaluated beside the shipped one
    (docs/model.md), not what the service uses."""
    name = "gp-no-linear-mean"
    linear_features = ()


MODELS = {"gp": GPModel, "gp-v9": GPVersion9, "gp-hdd-linear-mean": GPHddLinearMean, "gp-with-width": GPWithWidth,
          "gp-no-linear-mean": GPNoLinearMean, "quantile-gb": QuantileBoost, "gp-workload": WorkloadGP}
