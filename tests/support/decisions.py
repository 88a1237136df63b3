"""Decisions on evidence typed in by hand (synthetic: they test the decision's logic only): a
recordsize recommendation, a model's prediction and a probe run of it."""
from __future__ import annotations

from advisor.engine.models import Recommendation
from advisor.engine.predicted import CandidatePrediction, PairEffect, ParameterPrediction
from advisor.evidence.parameters import CandidateEvidence, ParameterEvidence


def recordsize_rec(recommended: str = "32K", current: str = "128K", disagree: str | None = None) -> Recommendation:
    return Recommendation(parameter="recordsize", scope="dataset", current=current, recommended=recommended,
                          change=True, status="change", confidence=0.5, explanation="The rule says 32K.",
                          rule="recordsize-postgres", title="t", pool="tank", dataset="tank/pg",
                          apply="zfs set recordsize=32K tank/pg", apply_argv=["zfs", "set", "recordsize=32K", "tank/pg"],
                          effect="new-writes", reversible="yes", references=[], sources_disagree=disagree)


def synthetic_prediction(best: str, diff_interval: tuple[float, float], pair: tuple[str, str] = ("32K", "8K"),
               values: dict[str, float] | None = None) -> ParameterPrediction:
    """Candidates at `values` (perf / the default's), each with a +-10 % interval; every pair's
    effect the ratio of the two with +-10 %, except `pair`'s, which gets `diff_interval`."""
    values = values or {"8K": 1.6, "32K": 1.3, "128K": 1.0}
    cands = [CandidatePrediction(value=v, ratio=r, interval=(r * 0.9, r * 1.1), baseline=v == "128K")
             for v, r in values.items()]
    effects = [PairEffect(from_value=a, to_value=b, ratio=values[b] / values[a],
                          interval=diff_interval if (a, b) == pair else (0.9 * values[b] / values[a],
                                                                         1.1 * values[b] / values[a]))
               for a in values for b in values if a != b]
    return ParameterPrediction(parameter="recordsize", metric="iops", best=best, candidates=cands, effects=effects,
                               local_probes=0, lab_runs=10, model_version="test")


def probe_run(values: dict[str, float], log_sd: float = 0.04) -> ParameterEvidence:
    """A probe run of recordsize at `values` (mean IOPS), two repeats each, the first value the run's baseline."""
    first = next(iter(values))
    cands = [CandidateEvidence(value=v, baseline=v == first, rank=i, repeats=2, iops=iops, iops_min=iops * 0.97,
                               iops_max=iops * 1.03, iops_dispersion=0.06, run_interval=None, write_p99_seconds=0.006,
                               read_p99_seconds=None, sync_p99_seconds=None, compress_ratio=None, arc_hit_ratio=None,
                               effect_ratio=iops / values[first], effect_interval=None, write_p99_ratio=1.0,
                               distinguishable=False)
             for i, (v, iops) in enumerate(values.items())]
    return ParameterEvidence(parameter="recordsize", run_id=7, baseline=first, best=max(values, key=values.get),
                             pool={}, candidates=cands, repeat_log_sd=log_sd, degrees_of_freedom=len(values))
