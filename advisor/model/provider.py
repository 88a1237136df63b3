"""The model as the service and the CLI use it: the GP fitted on the shipped lab prior, conditioned
on this host's probes (a store reader, handed in: advisor/model/inputs.py) per store generation, answering the engine's
prediction lookup (advisor/engine/predicted.py) and choosing the next probes.

The fit is loaded from the JSON shipped beside the prior (advisor/model/fitted.py; numpy only,
nothing pickled); only when that file does not match the prior is the prior fitted here, with
scikit-learn.  This pool's probes are conditioned on at each new store generation (the id of the
newest probe result).  Without numpy, or without prior rows, `status()` says why and `lookup()`
returns None: the advice comes from the rules and probes.
"""
from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.engine.loader import RuleBook
from advisor.engine.measured import same_value
from advisor.engine.models import ModelStatus
from advisor.engine.predicted import (
    CandidatePrediction,
    PairEffect,
    ParameterPrediction,
    PredictionLookup,
    SiblingsUsed,
)
from advisor.engine.units import format_size, parse_size
from advisor.evidence.bound import storage_rows
from advisor.evidence.interval import Z90
from advisor.hostmodel.facts import Host
from advisor.hostmodel.tunables import DATASET_DEFAULTS, PREDICTED_PARAMETERS
from advisor.model import MODEL_VERSION, numpy_missing, sklearn_missing
from advisor.model.change_samples import change_observations
from advisor.model.dataset import Sample, load_csv, prior_path, samples
from advisor.model.features import (
    KNOWN_COMPRESSION,
    Observation,
    WorkloadShape,
    from_result,
    query,
    settings_key,
    supported,
)
from advisor.model.inputs import ProbeDescription, ProbeResults
from advisor.model.select import choose, feasible

log = logging.getLogger(__name__)


def grid(probes: ProbeDescription, parameter: str, workload: Any, params: dict[str, str] | None = None) -> list[str]:
    """The values the advisor considers for `parameter` (the probe plan's grid)."""
    if parameter == "compression":
        return list(KNOWN_COMPRESSION)
    page = (params or {}).get("page_size") or (
        workload.parameters["page_size"].default if "page_size" in workload.parameters else None)
    return probes.recordsize_grid(page or workload.io.block_size)


def candidates_of(probes: ProbeDescription, base: Observation, workload: Any,
                  params: dict[str, str] | None = None) -> list[Observation]:
    """The probe grid as observations: the recordsize grid and compression=off, baseline first."""
    out = [base.with_candidate("recordsize", DATASET_DEFAULTS["recordsize"])]
    out += [base.with_candidate("recordsize", v) for v in grid(probes, "recordsize", workload, params)
            if parse_size(v) != parse_size(DATASET_DEFAULTS["recordsize"])]
    out.append(base.with_candidate("compression", "off"))
    return out


def _reference(base: Observation, grid_obs: list[Observation], recordsize: str | None) -> Observation | None:
    """The grid's observation of a dataset's recordsize (added to the grid when the workload's grid
    lacks it); None for the default or no value."""
    if recordsize is None or same_value(recordsize, DATASET_DEFAULTS["recordsize"]):
        return None
    found = next((o for o in grid_obs if o.parameter == "recordsize" and same_value(o.value, recordsize)), None)
    if found is None:
        found = base.with_candidate("recordsize", format_size(parse_size(recordsize)))
        grid_obs.insert(1, found)
    return found


def _used(fleet: Any) -> SiblingsUsed | None:
    """What an answer says of the siblings it read (advisor/fleet/view.py Siblings)."""
    if fleet is None or not fleet.samples:
        return None
    return SiblingsUsed(probes=fleet.probes, pools=fleet.pools, age_seconds=round(fleet.age_seconds, 1),
                        disagreeing=fleet.disagreeing)


@dataclass(frozen=True)
class FittedModel:
    """A model already fitted, its lab rows and its version: the evaluation's held-out fits
    (advisor/model/answers.py), handed to the provider instead of the lab prior's fit."""

    model: Any
    prior: list[Sample]
    version: str


class ModelProvider:
    """`results`: this host's probes (advisor/store/results.py); `probes`: what a probe would run
    (advisor/probe/description.py); `fitted`: a model fitted elsewhere, used as it is (no `fit`)."""

    def __init__(self, results: ProbeResults, probes: ProbeDescription, book: RuleBook,
                 csv_path: str | Path | None = None, seed: int = 0, enabled: bool = True,
                 fitted: FittedModel | None = None):
        self.results = results
        self.probes = probes
        self.enabled = enabled
        self.book = book
        self.csv_path = Path(csv_path) if csv_path is not None else prior_path()
        self.seed = seed
        self._lock = threading.Lock()
        self._model: Any = None
        self._prior: list[Sample] = []
        self._reason: str | None = "the model is being fitted"
        self._version: str | None = None
        self._cache: dict[tuple, ParameterPrediction | None] = {}
        self._generation: Hashable = None
        self._done = threading.Event()  # cleared while a fit is under way (`begin`)
        self._done.set()
        # Sibling pools' probes (advisor/fleet/, set by the app when [fleet] is on): (pool, workload,
        # the pool's default candidate, host) -> what the fleet's last good view has of its siblings
        self.siblings: Callable[[str, str, Observation, Host | None], Any] | None = None
        self.fleet_generation: Callable[[], Hashable] = lambda: None  # the view's: answers follow a new one
        if fitted is not None:
            self._model, self._prior, self._reason, self._version = fitted.model, fitted.prior, None, fitted.version

    # --- fitting ------------------------------------------------------------------------------
    def begin(self) -> None:
        """A fit is about to start (in a worker thread): answers wait for it rather than differ
        by a race with it."""
        self._done.clear()

    def wait(self, timeout: float = 60.0) -> bool:
        return self._done.wait(timeout)

    def fit(self) -> ModelProvider:
        """Load the fit of the lab prior, or fit it; blocking (the service runs it in a thread)."""
        try:
            return self._fit()
        except Exception as exc:  # advice goes on from the rules and probes; the log says why
            log.exception("the regression model could not be fitted")
            self._reason = f"the regression model is unavailable: fitting failed: {exc}"
            return self
        finally:
            self._done.set()

    def _fit(self) -> ModelProvider:
        if not self.enabled:
            self._reason = "the regression model is turned off (setting model = false)"
            return self
        missing = numpy_missing()
        if missing:
            self._reason = f"the regression model is unavailable: {missing}"
            return self
        prior = samples(load_csv(self.csv_path))
        if len(prior) < 5:
            self._reason = f"the regression model is unavailable: no lab prior rows in {self.csv_path}"
            return self
        from advisor.model import fitted

        try:
            model, doc = fitted.load(self.csv_path)  # numpy only: the shipped fit (advisor/model/fitted.py)
            digest, how = doc["prior_sha256"], "loaded from " + fitted.fitted_path(self.csv_path).name
        except fitted.FittedError as exc:
            missing = sklearn_missing()
            if missing:
                self._reason = f"the regression model is unavailable: {exc}, and to fit it {missing}"
                return self
            log.info("%s: fitting the model on %s", exc, self.csv_path.name)
            from advisor.model.regress import GPModel  # scikit-learn: only here

            model = GPModel(self.seed, fitted.RESTARTS, calibrate=True).fit(prior)
            digest, how = fitted.digest(self.csv_path), "fitted"
        with self._lock:
            self._model, self._prior, self._reason = model, prior, None
            self._version = f"{MODEL_VERSION}+gp.prior-{digest[:8]}"
            self._cache.clear()
        log.info("regression model %s %s (%d lab rows)", self._version, how, len(prior))
        return self

    def status(self, wait_seconds: float = 60.0) -> ModelStatus | None:
        """What answers say about the model; None when it is turned off (not consulted). A fit under
        way is waited for at most `wait_seconds`: past it, the status says it is being fitted."""
        if not self.enabled:
            return None
        self.wait(wait_seconds)
        if self._model is None:
            return ModelStatus(available=False, reason=self._reason)
        return ModelStatus(available=True, version=self._version, lab_runs=len(self._prior))

    # --- this host ----------------------------------------------------------------------------
    def generation(self) -> Hashable:
        """The newest probe result's id and the changes verified: predictions are recomputed when
        either moves."""
        return self.results.generation()

    def local_samples(self, pool: str, workload: Any) -> list[Sample]:
        """This pool's probe results of the workload (dataset candidates the model knows) as samples;
        runs the host's CPU bound are no observation of the storage (advisor/evidence/bound.py)."""
        shape = WorkloadShape.of(workload)
        rows, _ = storage_rows(list(self.results.results_for(pool, workload.name)))
        obs = [from_result(r, shape, pool) for r in rows
               if r.scope == "dataset" and r.parameter in PREDICTED_PARAMETERS]
        return [s for s in samples(o for o in obs if supported(o))]

    def base_observation(self, pool: str, workload: Any, params: dict[str, str] | None = None,
                         host: Host | None = None, descriptor: dict | None = None,
                         local: list[Sample] | None = None) -> Observation | None:
        """The default candidate on `pool`: from its probes when there are any, else from the
        probe job the workload would run and the pool's descriptor."""
        if local:
            return local[0].obs.with_candidate("recordsize", DATASET_DEFAULTS["recordsize"])
        if descriptor is None:
            facts = host.pool(pool) if host is not None else None
            if host is None or facts is None:
                return None
            descriptor = self.probes.pool(facts, host.disks)
        job = self.probes.job(workload, dict(params or {}))
        if job is None:
            return None
        return query(WorkloadShape.of(workload), job.text, job.working_set_bytes, job.arc_max_bytes, descriptor, pool)

    def covers(self, base: Observation) -> bool:
        """Whether the lab measured workloads like this one: the same I/O pattern, and a block size
        within the range it measured.  Beyond it the model would extrapolate: no prediction."""
        like = [s.obs for s in self._prior if s.obs.pattern == base.pattern]
        return bool(like) and (min(o.block_size_bytes for o in like) <= base.block_size_bytes
                               <= max(o.block_size_bytes for o in like))

    # --- the engine's lookup ------------------------------------------------------------------
    def lookup(self, host: Host, params: dict[str, str] | None = None,
               wait_seconds: float = 60.0) -> PredictionLookup | None:
        """What `recommend(predicted=...)` takes, or None when the model is unavailable."""
        self.wait(wait_seconds)
        if self._model is None:
            return None
        generation = self.generation()
        with self._lock:
            if generation != self._generation:
                self._cache.clear()
                self._generation = generation

        def predict(pool: str, workload_name: str, parameter: str, extra: list[str]) -> ParameterPrediction | None:
            facts = host.pool(pool)
            shape = json.dumps(self.probes.pool(facts, host.disks), sort_keys=True, default=str) if facts else None
            key = (generation, self.fleet_generation(), pool, shape, workload_name, parameter, tuple(extra),
                   tuple(sorted((params or {}).items())))
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
            result = self.predict(pool, workload_name, parameter, extra, params, host=host)
            with self._lock:
                self._cache[key] = result
            return result

        return predict

    def predict(self, pool: str, workload_name: str, parameter: str, extra: Sequence[str] = (),
                params: dict[str, str] | None = None, host: Host | None = None,
                descriptor: dict | None = None) -> ParameterPrediction | None:
        workload = self.book.workloads.get(workload_name)
        if self._model is None or workload is None or parameter not in PREDICTED_PARAMETERS:
            return None
        probed = self.local_samples(pool, workload)
        base = self.base_observation(pool, workload, params, host, descriptor, probed)
        if base is None or (not probed and not self.covers(base)):
            return None
        changed = samples(change_observations(self.results.verified_changes(pool), workload.name, base))
        local = probed + changed
        values: dict[int | str, str] = {}
        for v in [*grid(self.probes, parameter, workload, params), DATASET_DEFAULTS[parameter], *extra]:
            try:
                k: int | str = parse_size(v) if parameter == "recordsize" else v.strip().lower()
            except ValueError:
                continue
            values.setdefault(k, format_size(k) if isinstance(k, int) else k)
        queries = [q for q in (base.with_candidate(parameter, v) for v in values.values()) if supported(q)]
        if len(queries) < 2:
            return None
        fleet = self.siblings(pool, workload.name, base, host) if self.siblings is not None else None
        model = self._model
        if fleet is not None and fleet.samples:
            from advisor.model.siblings import WithSiblings  # numpy: only with the model

            model = WithSiblings(model, fleet.samples)
        prediction = model.predict(local, queries)
        perf, p99 = prediction.perf, prediction.p99
        # Against the default as predicted for this pool (its ratio is 1 by definition): the
        # difference of the two, their covariance counted.
        b = next(i for i, q in enumerate(queries) if q.baseline)
        # the intervals (and the decision's P(gain)) as calibrated on held-out lab pairs
        scale = prediction.perf_scale
        cands = []
        for i, q in enumerate(queries):
            d, sd = perf.difference(i, b)
            sd *= scale
            d99 = p99.difference(i, b)[0] if p99 is not None else None  # shown; `feasible` weighs its sd
            cands.append(CandidatePrediction(
                value=q.value, ratio=round(math.exp(d), 4),
                interval=(round(math.exp(d - Z90 * sd), 4), round(math.exp(d + Z90 * sd), 4)),
                write_p99_ratio=round(math.exp(d99), 4) if d99 is not None else None,
                feasible=feasible(prediction, i, b),
                probes=sum(1 for s in probed if s.obs.settings == q.settings), baseline=i == b))
        best = choose(prediction, queries, {settings_key(s.obs) for s in local})
        effects = []
        for i in range(len(cands)):
            for j in range(len(cands)):
                if i != j:
                    d, sd = perf.difference(j, i)
                    sd *= scale
                    effects.append(PairEffect(from_value=cands[i].value, to_value=cands[j].value,
                                              ratio=round(math.exp(d), 4),
                                              interval=(round(math.exp(d - Z90 * sd), 4), round(math.exp(d + Z90 * sd), 4))))
        return ParameterPrediction(parameter=parameter, metric=base.metric, best=cands[best].value, candidates=cands,
                                   effects=effects, local_probes=sum(c.probes for c in cands),
                                   lab_runs=len(self._prior), model_version=self._version or "",
                                   verified_changes=len({s.obs.run for s in changed}),
                                   siblings=_used(fleet))

    # --- probe selection ----------------------------------------------------------------------
    def next_probe_candidates(self, pool: str, workload_name: str, budget: int, params: dict[str, str] | None = None,
                              host: Host | None = None, descriptor: dict | None = None,
                              reference: str | None = None) -> list[Any]:
        """`budget` candidates for the next probe run of `pool` for the workload: the baseline (every
        result is a ratio to it, within one run) and the budget - 1 others expected improvement
        (advisor/model/select.py) asks for given the pool's probes so far.  Without the model: the
        grid in order.  The candidates are as the probe description makes them.

        `reference`: the recordsize of the dataset the workload lives on, when it is not the
        default and the budget holds another value: the run's baseline in place of the default, so
        that the run measures what that dataset would gain by a change (a run of the default and
        one other value leaves the dataset's own value to the model's prediction)."""
        from advisor.model.select import next_candidates

        workload = self.book.workloads[workload_name]
        local = self.local_samples(pool, workload) if self._model is not None else []
        base = self.base_observation(pool, workload, params, host, descriptor, local)
        if base is None:
            return []
        grid_obs = candidates_of(self.probes, base, workload, params)
        ref = _reference(base, grid_obs, reference) if budget >= 2 else None
        if ref is not None and any(settings_key(s.obs) == settings_key(ref) for s in local):
            ref = None  # measured here already, against the default: the model reads it as it is
        if ref is not None:
            if self._model is None:
                chosen = [ref, *(o for o in grid_obs if o is not ref)][:budget]
            else:
                chosen = next_candidates(self._model, local, grid_obs, budget, reference=ref)
            # the run's baseline is the reference: its ratios are to the dataset's value
            return [self.probes.candidate(o.parameter, o.value, o is ref) for o in chosen]
        if self._model is None:
            chosen = grid_obs[:max(budget, 1)]
        else:
            has_base = any(s.obs.baseline for s in local)
            chosen = next_candidates(self._model, local, grid_obs, budget - 1 if has_base else budget)
            if not any(o.baseline for o in chosen):
                chosen.insert(0, grid_obs[0])
        return [self.probes.candidate(o.parameter, o.value, o.baseline) for o in chosen]
