"""The regression model's predictions meet the rules: confirm, reorder or overrule a dataset setting.

Pure: the caller (advisor/api/recommend.py, advisor/cli/recommend.py) builds the predictions
outside the engine (advisor/model/provider.py) and passes a lookup in, as it passes probe
evidence (`measured=`).  A recommendation the probes of this pool decided (`source: probe`)
is left alone: a measurement of this pool wins over a prediction.

* confirm: the model's best value is the rule's; `source: rule+model` with the predicted effect.
* reorder: the model ranks another value first but its 90 % interval of the difference to the
  rule's value includes no change; the rule's value stands, `source: rule+model`.
* overrule: the interval excludes no change; the model's value replaces the rule's,
  `source: model`, and the explanation says what the rule said.
* a rule that accepts several values passes the current one (recordsize 128K among 32K, 64K and
  128K); when the model's 90 % interval says the chosen value beats the current one, the item
  becomes a change, and the explanation says so.
"""
from __future__ import annotations

import shlex
from typing import Callable

from pydantic import BaseModel, Field

from advisor.engine.measured import _command, same_value
from advisor.engine.models import Evidence, ExpectedEffect, Recommendation

PREDICTED_PARAMETERS = ("recordsize", "compression")


class CandidatePrediction(BaseModel):
    value: str
    ratio: float = Field(description="predicted perf / the ZFS default's on this pool")
    interval: tuple[float, float] = Field(description="90 % interval of the ratio")
    write_p99_ratio: float | None = None
    feasible: bool = Field(True, description="predicted write p99 within 1.5x the default's")
    probes: int = Field(0, description="repeats of this value measured on this pool")
    baseline: bool = Field(False, description="the ZFS default, the others' reference (ratio 1)")


class PairEffect(BaseModel):
    from_value: str
    to_value: str
    ratio: float
    interval: tuple[float, float]


class ParameterPrediction(BaseModel):
    parameter: str
    metric: str  # iops or bandwidth
    best: str
    candidates: list[CandidatePrediction]
    effects: list[PairEffect]
    local_probes: int
    lab_runs: int
    model_version: str

    def candidate(self, value: str | None) -> CandidatePrediction | None:
        return next((c for c in self.candidates if same_value(c.value, value)), None)

    def effect(self, from_value: str | None, to_value: str | None) -> PairEffect | None:
        return next((e for e in self.effects if same_value(e.from_value, from_value)
                     and same_value(e.to_value, to_value)), None)


# (pool, workload, parameter, values the answer needs besides the model's own grid) -> prediction
PredictionLookup = Callable[[str, str, str, list[str]], ParameterPrediction | None]


def apply_predictions(recs: list[Recommendation], workload: str, lookup: PredictionLookup,
                      new_datasets: frozenset[str] = frozenset()) -> list[Recommendation]:
    return [_apply(rec, workload, lookup, new_datasets) for rec in recs]


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f}%"


def _span(interval: tuple[float, float]) -> str:
    return f"{_pct(interval[0])}..{_pct(interval[1])}"


def _effect_text(c: CandidatePrediction, metric: str) -> str:
    if c.baseline:
        return f"{c.value} (the ZFS default)"
    return f"{c.value}: {_pct(c.ratio)} {metric} against the ZFS default (90% interval {_span(c.interval)})"


def _apply(rec: Recommendation, workload: str, lookup: PredictionLookup, new_datasets: frozenset[str]) -> Recommendation:
    if (rec.source == "probe" or rec.scope != "dataset" or rec.kind != "setting" or rec.pool is None
            or rec.parameter not in PREDICTED_PARAMETERS):
        return rec
    extra = [v for v in (rec.current, rec.recommended) if v]
    pred = lookup(rec.pool, workload, rec.parameter, extra)
    if pred is None or not pred.candidates:
        return rec
    ruled = pred.candidate(rec.recommended)
    best = pred.candidate(pred.best)
    assert best is not None
    metric = pred.metric.upper() if pred.metric == "iops" else pred.metric
    where = (f"from {pred.local_probes} probe{'s' if pred.local_probes != 1 else ''} on this pool and "
             f"{pred.lab_runs} lab runs (model {pred.model_version})")
    choice, source = rec.recommended, "rule+model"
    if ruled is None:
        verdict = (f"The model cannot predict the rule's value {rec.recommended}; it predicts best "
                   f"{_effect_text(best, metric)}.")
    elif same_value(ruled.value, best.value):
        verdict = f"The model confirms the rule: it predicts best {_effect_text(best, metric)}."
    else:
        diff = pred.effect(ruled.value, best.value)
        if diff is not None and diff.interval[0] > 1.0:
            choice, source = best.value, "model"
            verdict = (f"The model overrules the rule, which said {ruled.value}: {best.value} is predicted "
                       f"{_pct(diff.ratio)} {metric} over it (90% interval {_span(diff.interval)}).")
        else:
            span = f" (90% interval {_span(diff.interval)})" if diff is not None else ""
            verdict = (f"The model ranks {best.value} above the rule's {ruled.value} "
                       f"({_pct(diff.ratio) if diff else '?'} {metric}{span}) but cannot separate them")
            if _beaten(rec, pred, ruled.value) is None and _beaten(rec, pred, best.value) is not None:
                # The rule accepts the current value; of the two, only the model's best is predicted
                # to beat it beyond its interval: passing would hide a gain the data support.
                choice, source = best.value, "model"
                verdict += (f"; of the two only {best.value} is predicted to beat the current {rec.current} "
                            f"beyond doubt.")
            else:
                verdict += ", so the rule's value stands."
    beaten = _beaten(rec, pred, choice)
    if beaten is not None:
        verdict += (f" The rule accepts the current {rec.current}, but {choice} is predicted {_pct(beaten.ratio)} "
                    f"{metric} over it (90% interval {_span(beaten.interval)}), so the answer is to change it.")
    listing = "; ".join(f"{c.value}: {_pct(c.ratio)} ({_span(c.interval)})" for c in pred.candidates if not c.baseline)
    default = next((c.value for c in pred.candidates if c.baseline), "the default")
    explanation = (f"{rec.explanation} Predicted {metric} against the ZFS default ({default}), {where}: "
                   f"{listing}. {verdict}")
    facts = [Evidence(fact=f"model.{pred.parameter}.{c.value}.ratio", value=round(c.ratio, 3),
                      display=f"{_pct(c.ratio)} {metric} ({_span(c.interval)})",
                      description=f"predicted by the regression model {where}") for c in pred.candidates
             if not c.baseline]
    update: dict = {"source": source, "explanation": explanation, "evidence": rec.evidence + facts}
    if rec.current is None:  # a new dataset: against the ZFS default it would get
        chosen = pred.candidate(choice)
        effect = PairEffect(from_value="default", to_value=choice or "", ratio=chosen.ratio,
                            interval=chosen.interval) if chosen is not None else None
    else:
        effect = pred.effect(rec.current, choice) if not same_value(rec.current, choice) else None
    if effect is not None:
        update["expected_effect"] = ExpectedEffect(metric=pred.metric, change_ratio=round(effect.ratio, 3),
                                                   interval=(round(effect.interval[0], 3), round(effect.interval[1], 3)))
    if beaten is not None and same_value(choice, rec.recommended):
        argv = _command(rec, choice, new_datasets) if choice else None
        update |= {"change": True, "status": "change", "apply": shlex.join(argv) if argv else None,
                   "apply_argv": argv}
    if not same_value(choice, rec.recommended):
        change = not same_value(choice, rec.current)
        argv = _command(rec, choice, new_datasets) if change and choice else None
        update |= {"recommended": choice, "change": change, "status": "change" if change else "passed",
                   "apply": shlex.join(argv) if argv else None, "apply_argv": argv}
    return rec.model_copy(update=update)



def _beaten(rec: Recommendation, pred: ParameterPrediction, choice: str | None) -> PairEffect | None:
    """A rule that accepts several values passes the current one (recordsize 128K among "32K, 64K or
    128K"); when the model's 90 % interval says the chosen value beats it, passing would hide that."""
    if rec.status != "passed" or rec.current is None or choice is None or same_value(rec.current, choice):
        return None
    gain = pred.effect(rec.current, choice)
    return gain if gain is not None and gain.interval[0] > 1.0 else None
