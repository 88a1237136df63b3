"""One decision per setting from the ladder of evidence, and no change without a predicted gain.

The ladder, strongest first (docs/recommendations.md, "How the answer decides"): this pool's probe,
the regression model (the lab prior conditioned on this pool's probes) with its 90 % interval, the
rule (what the documentation says).

* The proposal: the model's pick where it predicts the setting, unless the probe measured a
  candidate that beats that pick beyond the run's noise, or the pick is predicted no better on
  average than an undisputed rule's value (it won on caution alone: the documentation breaks the
  tie); else the probe's measured best; else the rule's value (the current one where the rule
  accepts it).
* Its gain over the current value: the model's prediction when it has one (it is conditioned on
  this pool's probes: the combined evidence), else the probe's measurement of both.
* The decision:
  - the proposal is the current value: passed (keep it);
  - the gain is sure enough (CHANGE_PROBABILITY; for a measurement its 90 % interval above 1):
    change, unless a probe of this pool measured the proposal no better than the current value;
  - a dataset still to be created: the proposal, when a gain is likely (NEW_DATASET_PROBABILITY);
  - else the rule's own value, when the rule is undisputed and the evidence predicts it a gain
    (the documentation and the data agree): change to it;
  - the gain is predicted at most 1: passed: nothing is predicted to beat the current value, and a
    rule that said otherwise is named with its predicted effect;
  - the prediction does not separate the proposal from the current value, and this pool's probe
    measured the proposal no better (with repeats): passed, the measurement that would decide has
    been made and found no gain;
  - otherwise: undecided: keep the current value, `measure` says how to decide;
  - no measurement or prediction: the rule decides, except that a rule whose sources disagree does
    not force a change on its own: undecided.

Pure: the callers pass the probe evidence (advisor/evidence/parameters.py, read from the store) and
the model's predictions (advisor/engine/predicted.py) in; nothing here reads the host or a store.
"""
from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from advisor.engine.measured import WRITE_P99_TOLERANCE, candidate_display, find, measured_best, same_value
from advisor.engine.models import Evidence, ExpectedEffect, Recommendation
from advisor.engine.predicted import ParameterPrediction, pct, span
from advisor.engine.units import parse_size, shown_value
from advisor.evidence.app_findings import AppFinding, PairFinding
from advisor.evidence.interval import Z90
from advisor.evidence.lab_grid import LabMeasurement
from advisor.evidence.parameters import CandidateEvidence, ParameterEvidence
from advisor.hostmodel.tunables import PREDICTED_PARAMETERS


@dataclass(frozen=True)
class Steps:
    """A measurement of several commands, each an argv, run in order, each only once the one
    before has succeeded (a zvol's volblocksize: advisor/engine/volblocksize_measure.py);
    `about` says what they do, for the answer's explanation."""
    argvs: tuple[tuple[str, ...], ...]
    about: str

    @property
    def text(self) -> str:
        return " && ".join(shlex.join(argv) for argv in self.argvs)


# (recommendation, value) -> the command that sets it (argv, or a shell line for module parameters)
Setter = Callable[[Recommendation, str], "list[str] | str | None"]
# (recommendation, values to compare) -> the command that measures them: a probe's argv (or text
# when it holds a placeholder the user fills in), the steps of a measurement no probe can make, or
# None
Measurer = Callable[[Recommendation, list[str]], "list[str] | str | Steps | None"]


# How sure a prediction must be that the proposal beats the current value before it is advised
# as a change: P(ratio > 1) under the model's predictive distribution (normal in log ratio; 0.95
# is its 90 % interval lying above 1).  A probe's measured gain must always clear its own 90 %
# interval: that is the standard of a measurement (advisor/evidence/interval.py).
CHANGE_PROBABILITY = 0.95
# A dataset still to be created costs the same at any value, so the model's pick for it needs less
# than a change of an existing one, but still odds of a gain: P(gain) of at least this.  Chosen on
# the held-out answers of a prior with the raidz1 of eight HDDs (docs/model.md): after two probes
# the pick there was 64K at P 0.70, and the lab measured 64K at 0.80x the default.
NEW_DATASET_PROBABILITY = 0.8


@dataclass(frozen=True)
class Gain:
    """The effect of the proposal against the current value, and who says so."""
    ratio: float
    interval: tuple[float, float] | None  # 90 %; None: no interval (one repeat each)
    source: str  # "probe", "model" or "lab"
    metric: str = "iops"  # what the ratio is of: a probe measures IOPS, the model iops or bandwidth

    @property
    def probability(self) -> float | None:
        """P(ratio > 1) for a prediction: its 90 % interval read as a normal in log ratio (the
        interval as calibrated on held-out lab pairs, advisor/model/calibration.py)."""
        if self.interval is None or self.source != "model" or self.ratio <= 0:
            return None
        sd = (math.log(self.interval[1]) - math.log(self.interval[0])) / (2 * Z90)
        if sd <= 0:
            return 1.0 if self.ratio > 1 else 0.0
        return 0.5 * (1 + math.erf(math.log(self.ratio) / sd / math.sqrt(2)))

    @property
    def separated(self) -> bool:
        if self.interval is None:
            return False
        if self.source == "model":
            return self.ratio > 1.0 and (self.probability or 0.0) >= CHANGE_PROBABILITY
        return self.interval[0] > 1.0


@dataclass(frozen=True)
class Ladder:
    """What one setting's decision may use besides the rule: the probe and the model."""
    probe: ParameterEvidence | None = None
    probe_where: str = "this pool"  # a module parameter's probe ran on a named pool
    prediction: ParameterPrediction | None = None
    # A dataset still to be created: every value costs the same (nothing to rewrite), so the
    # evidence's pick is taken when a gain over the default is likely (NEW_DATASET_PROBABILITY);
    # the pick itself weighs the prediction's uncertainty (advisor/model/select.py, CAUTION).
    new_dataset: bool = False
    # A module parameter neither probed here nor predicted: the lab's grid of the same workload on a
    # pool of the same medium (advisor/evidence/lab_grid.py), for the rule's value against the current.
    lab: LabMeasurement | None = None
    # The load the probe, the model and the lab measure for this answer: an expected effect is a
    # ratio of that job's IOPS, a claim about fio until the application's own metric confirms it.
    job: str = "the probe's fio job"
    # What the application lab found of the prior's evidence for this parameter on this medium
    # (advisor/evidence/app_findings.py): a gain the model alone predicts must survive it.
    finding: AppFinding | None = None


def decide(rec: Recommendation, ladder: Ladder, setter: Setter, measurer: Measurer) -> Recommendation:
    if rec.kind != "setting" or rec.status == "skipped":
        return rec
    return _set_aside_noted(_decide(rec, ladder, setter, measurer), ladder)


def _set_aside_noted(rec: Recommendation, ladder: Ladder) -> Recommendation:
    """The probe runs of this setting set aside as evidence (the host's CPU set their pace,
    advisor/evidence/bound.py), named with why: the answer above was decided without them."""
    runs = ladder.probe.set_aside if ladder.probe is not None else []
    if not runs:
        return rec
    notes = [f"Probe run {a.run_id} on {ladder.probe_where} was set aside ({a.repeats} "
             f"repeat{'s' if a.repeats != 1 else ''} CPU-bound): {a.reason}. It is no evidence about the storage "
             "and moves nothing here; probe again when the host's CPU is not busy." for a in runs]
    facts = [Evidence(fact=f"probe.{a.parameter}.set_aside", value=a.run_id,
                      display=f"run {a.run_id} set aside: CPU-bound", description=a.reason) for a in runs]
    return rec.model_copy(update={"evidence": rec.evidence + facts,
                                  "explanation": " ".join(p for p in [rec.explanation, *notes] if p)})


def _decide(rec: Recommendation, ladder: Ladder, setter: Setter, measurer: Measurer) -> Recommendation:
    probe = ladder.probe if ladder.probe is not None and ladder.probe.candidates else None
    pred = ladder.prediction if ladder.prediction is not None and ladder.prediction.candidates else None
    current = rec.current
    if probe is None and pred is None:
        if ladder.lab is not None and (decided := _lab_decides(rec, ladder.lab, setter, measurer, ladder.job)) is not None:
            return decided
        return _rule_alone(rec, measurer)
    proposal, why = _proposal(rec, probe, pred)
    if rec._at_least is not None and probe is None and _smaller(proposal, rec._at_least[0]):  # a probe here decides
        proposal, why = _at_least(rec, rec._at_least, proposal, probe, pred)
    status, value, gain, verdict = _verdict(rec, proposal, probe, pred, ladder.new_dataset)
    held: list[Evidence] = []
    if status == "change" and (holds := _application_holds(rec, value, gain, probe, ladder.finding)):
        status, verdict, held = "undecided", holds[0], [holds[1]]
    elif status == "change" and (caution := _application_caution(rec, value, ladder.finding)):
        verdict, held = f"{verdict} {caution[0]}", [caution[1]]
    ruled = rec.recommended if rec.status == "change" else None
    notes = [why] if why else []
    if ruled is not None and not same_value(ruled, value) and current is not None:
        notes.append(_rule_note(ruled, current, probe, pred))
    trade = _latency_note(current, pred) if status != "change" and pred is not None else ""
    update: dict = {"evidence": rec.evidence + _evidence(rec, ladder, probe, pred) + held,
                    "source": _source(rec, status, value, probe, pred),
                    "explanation": " ".join(p for p in [rec.explanation, *_listings(ladder, probe, pred), *notes,
                                                        verdict, trade] if p)}
    if status == "change":
        update |= _change(rec, value, gain, setter, ladder.job)
        update["requirement"] = f"= {value}"
    else:
        update |= _keep(rec, status, [v for v in (current, value, ruled) if v], measurer,
                        baseline=_baseline(probe, pred), explanation=update["explanation"])
        if ruled is not None or not same_value(value, current):
            update["requirement"] = f"= {current} (the evidence does not support {ruled or value})"
    return rec.model_copy(update=update)


def _verdict(rec: Recommendation, proposal: str, probe: ParameterEvidence | None,
             pred: ParameterPrediction | None, new_dataset: bool = False) -> tuple[str, str, Gain | None, str]:
    """(status, the value it is about, its gain over the current value, why)."""
    current = rec.current
    gain = _gain(current, proposal, probe, pred)
    if same_value(proposal, current):
        return "passed", proposal, None, f"The evidence favours keeping the current {current}."
    if gain is None:
        return "undecided", proposal, None, (
            f"{proposal} ranks first, but nothing measured or predicted compares it with the current {current}: "
            f"keep {current} until a probe of both decides.")
    if gain.separated:
        measured = _measured(current, proposal, probe)
        if measured is not None and measured.ratio <= 1:  # a prediction never overrules what this pool measured
            return "passed", proposal, gain, (
                f"{proposal} is predicted {pct(gain.ratio)}, but the probe of this pool measured it at "
                f"{pct(measured.ratio)}{_interval_text(measured)} against the current {current}: keep it.")
        return "change", proposal, gain, (
            f"{proposal} is {_by(gain)} {pct(gain.ratio)} {_metric(pred)} over the current {current}"
            f"{_interval_text(gain)}: change it.")
    if new_dataset and (gain.probability or 0.0) >= NEW_DATASET_PROBABILITY \
            and _measured(current, proposal, probe) is None:  # P >= 0.8 implies a ratio above 1
        return "change", proposal, gain, (
            f"{proposal} is {_by(gain)} {pct(gain.ratio)} {_metric(pred)} over the default {current}"
            f"{_interval_text(gain)}. The dataset is still to be created, so either value costs the same: "
            f"create it with {proposal}, the value the evidence favours.")
    agreed = _agreed(rec, probe, pred)
    if agreed is not None:
        ruled, ruled_gain = agreed
        return "change", ruled, ruled_gain, (
            f"The documentation's {ruled} is {_by(ruled_gain)} {pct(ruled_gain.ratio)} {_metric(pred)} over the "
            f"current {current}{_interval_text(ruled_gain)}: the interval alone does not exclude a loss, but the "
            "documented value and the prediction agree, so change it.")
    if gain.ratio <= 1.0:
        return "passed", proposal, gain, (
            f"Nothing is {_by(gain)} to beat the current {current} ({proposal}: {pct(gain.ratio)}"
            f"{_interval_text(gain)}): keep it.")
    measured = _measured(current, proposal, probe)
    if gain.source == "model" and measured is not None and measured.interval is not None and measured.ratio <= 1:
        # the probe that would decide has run, and found no gain: as above, a prediction never
        # overrules what this pool measured (an undecided answer would name the same probe again)
        return "passed", proposal, gain, (
            f"The probe of {proposal} and the current {current} measured no gain ({pct(measured.ratio)} IOPS"
            f"{_interval_text(measured)}), and the prediction ({pct(gain.ratio)}{_interval_text(gain)}) does not "
            f"separate them: keep {current}.")
    return "undecided", proposal, gain, (
        f"{proposal} is {_by(gain)} {pct(gain.ratio)} {_metric(pred)} over the current {current}"
        f"{_interval_text(gain)}, which does not rule out no gain or a loss: keep {current} until a probe tells "
        "them apart.")


def _application_holds(rec: Recommendation, value: str, gain: Gain | None, probe: ParameterEvidence | None,
                       finding: AppFinding | None) -> tuple[str, Evidence] | None:
    """Why a change the model alone predicts is not made, and the application's figure as evidence
    (`application.<parameter>`); None when it stands: the prior
    behind the prediction was paced by the lab's emulated CPU, and where the disks set the pace a real
    application did not confirm the gain (advisor/evidence/app_findings.py).  A probe of this pool
    that measured the gain beyond its own noise, at the pool's own pace, decides as without the
    finding.  Short of that the model's confidence is still the prior's: its interval conditioned on
    a noisy probe, or on sibling pools' probes (docs/fleet.md), narrows around the prior's effect,
    which the application did not confirm."""
    current = rec.current
    if finding is None or gain is None or current is None:
        return None
    measured = _measured(current, value, probe)
    if measured is not None and measured.separated:
        return None
    pair = finding.unconfirmed(value, current, same_value)
    if pair is None:
        return None
    found, fact = _application_figure(rec, value, current, pair, finding)
    return (f"{value} is {_by(gain)} {pct(gain.ratio)} over the current {current}{_interval_text(gain)}, but the "
            "confidence in that gain rests on the lab's fio measurements, whose pace the lab's emulated CPU set, not "
            "its disks; "
            f"{found}{', ' + finding.probe_job if finding.probe_job else ''}. A storage change is for a pool whose "
            f"disks set the pace, and there the predicted gain did not reach the application: keep {current} until a "
            "probe of this pool measures a gain at its own pace beyond the run's noise"
            f"{' (this one measured ' + pct(measured.ratio) + ' IOPS' + _interval_text(measured) + ')' if measured else ''}"
            ", and check the result with the application's own metric."
            ), fact


def _application_caution(rec: Recommendation, value: str, finding: AppFinding | None) -> tuple[str, Evidence] | None:
    """A change this pool's probe decided, where the application lab saw the application not
    confirm it on the same medium: the change stands (the probe measured this pool), and the answer
    says that the probe's gain is in its fio job's units, with the application's figure."""
    current = rec.current
    if finding is None or current is None or (pair := finding.unconfirmed(value, current, same_value)) is None:
        return None
    found, fact = _application_figure(rec, value, current, pair, finding)
    return (f"The gain is the probe's, in its fio job's IOPS: in the application lab {found}. Measure the "
            "application's own metric before and after the change."), fact


def _application_figure(rec: Recommendation, value: str, current: str, pair: PairFinding,
                        finding: AppFinding) -> tuple[str, Evidence]:
    """The application's measurement of `value` against `current`, in words and as evidence."""
    lo, hi = pair.interval
    found = (f"{finding.application} measured {value} at {pair.ratio:.2f}x the {finding.metric} of {current} "
             f"(90 % interval {lo:.2f}-{hi:.2f}) on {finding.where}")
    fact = Evidence(fact=f"application.{rec.parameter}", value=round(pair.ratio, 3),
                    display=f"{value} at {pair.ratio:.2f}x {current} ({finding.metric}, 90 % {lo:.2f}-{hi:.2f})",
                    description=f"{finding.application}, on {finding.where} (the lab's grid {pair.grid})")
    return found, fact


def _agreed(rec: Recommendation, probe: ParameterEvidence | None,
            pred: ParameterPrediction | None) -> tuple[str, Gain] | None:
    """The rule's value, when the rule is undisputed and the evidence predicts it a gain over the
    current value (and no probe of this pool measured it losing): two sources agreeing."""
    ruled = rec.recommended if rec.status == "change" else None
    if ruled is None or rec.sources_disagree or same_value(ruled, rec.current):
        return None
    gain = _gain(rec.current, ruled, probe, pred)
    if gain is None or gain.ratio <= 1.0:
        return None
    measured = _measured(rec.current, ruled, probe)
    return (ruled, gain) if measured is None or measured.ratio > 1.0 else None


# --- the rungs --------------------------------------------------------------------------------
def _proposal(rec: Recommendation, probe: ParameterEvidence | None,
              pred: ParameterPrediction | None) -> tuple[str, str]:
    """(the value the evidence proposes, why the probe displaced the model's pick, if it did)."""
    if pred is not None:
        if probe is not None:
            best, picked = measured_best(probe), find(probe, pred.best)
            if picked is not None and best.value != picked.value and probe.separated(best, picked) \
                    and best.iops > picked.iops:
                return best.value, (f"The probe measured {best.value} above the model's pick {pred.best} beyond "
                                    "the run's noise, so the measurement decides.")
        tie = _documented_tie(rec, probe, pred)
        if tie is not None:
            return tie
        return pred.best, ""
    assert probe is not None
    return measured_best(probe).value, ""


def _smaller(value: str, floor: str) -> bool:
    try:
        return parse_size(value) < parse_size(floor)
    except ValueError:
        return False


def _at_least(rec: Recommendation, floor: tuple[str, str], ranked: str, probe: ParameterEvidence | None,
              pred: ParameterPrediction | None) -> tuple[str, str]:
    """The proposal when the evidence's first choice is below the rule's floor: the value the model
    predicts best among those it may pick at or above the floor, else the probe's best measured
    there, else the rule's own value (never below the floor)."""
    allowed = [c for c in pred.candidates if c.feasible and not _smaller(c.value, floor[0])] if pred else []
    measured = [c for c in probe.candidates if not _smaller(c.value, floor[0])] if probe else []
    if allowed:
        value, how = max(allowed, key=lambda c: c.ratio).value, "the best predicted value"
    elif measured:
        value, how = max(measured, key=lambda c: c.iops).value, "the best measured value"
    else:
        value, how = (rec.recommended if rec.status == "change" else rec.current) or floor[0], "the rule's value"
    return value, (f"{ranked} ranks first but is below {floor[0]}, {floor[1]}, under which this rule advises "
                   f"nothing: {value} is {how} of at least {floor[0]}.")


def _documented_tie(rec: Recommendation, probe: ParameterEvidence | None,
                    pred: ParameterPrediction) -> tuple[str, str] | None:
    """The rule's value instead of the model's pick when the data does not prefer the pick: the
    rule is undisputed, its value is predicted within the write p99 limit, the pick is predicted
    no better than it on average (the pick won on caution: a narrower interval, select.CAUTION),
    and no probe of this pool measured the pick above it.  The documentation breaks the tie; where
    the model expects the pick to do better, the pick stands (a documented value never outvotes
    the data)."""
    ruled = rec.recommended if rec.status == "change" else None
    if ruled is None or rec.sources_disagree or same_value(ruled, pred.best):
        return None
    candidate, effect = pred.candidate(ruled), pred.effect(ruled, pred.best)
    if candidate is None or not candidate.feasible or effect is None or effect.ratio > 1.0:
        return None
    measured = _measured(ruled, pred.best, probe)
    if measured is not None and measured.separated:
        return None
    versus = Gain(effect.ratio, effect.interval, "model")
    return ruled, (f"The model's pick {pred.best} is predicted {pct(effect.ratio)} {_metric(pred)} against the "
                   f"documentation's {ruled}{_interval_text(versus)}: the model does not expect it to do better, "
                   "so the documented value is the proposal.")


def _gain(current: str | None, proposal: str, probe: ParameterEvidence | None,
          pred: ParameterPrediction | None) -> Gain | None:
    """The model's prediction of the pair when it has one and has read this pool's probes of both
    values (it is then the combined evidence), else the probe's measurement of both, else the
    model's prediction.  A run measured against the dataset's own value (`--param
    recordsize=8K,4K`) has no default among its values, so the model cannot read it (its targets
    are ratios to the default): the run's own ratio is then the evidence."""
    if current is None or same_value(current, proposal):
        return None
    effect = pred.effect(current, proposal) if pred is not None else None
    model = Gain(effect.ratio, effect.interval, "model", pred.metric) if pred is not None and effect is not None else None
    measured = _measured(current, proposal, probe)
    if model is not None and pred is not None and _model_read(pred, current, proposal):
        return model
    return measured or model


def _model_read(pred: ParameterPrediction, *values: str) -> bool:
    """Whether the model's prediction is conditioned on this pool's probes of each value."""
    return all((c := pred.candidate(v)) is not None and c.probes > 0 for v in values)


def _measured(current: str | None, proposal: str, probe: ParameterEvidence | None) -> Gain | None:
    """The probe's measurement of the proposal against the current value, when it measured both."""
    if probe is None or current is None:
        return None
    new, old = find(probe, proposal), find(probe, current)
    found = probe.ratio(new, old) if new is not None and old is not None else None
    return Gain(found[0], found[1], "probe") if found is not None else None


def _rule_alone(rec: Recommendation, measurer: Measurer) -> Recommendation:
    """No measurement or prediction: the documentation decides, unless its sources disagree."""
    if rec.status != "change" or not rec.sources_disagree:
        return rec
    verdict = (f"The sources disagree and nothing has been measured or predicted for this setting here, so the "
               f"advice is to keep {rec.current} until a measurement decides.")
    return rec.model_copy(update=_keep(rec, "undecided", [v for v in (rec.current, rec.recommended) if v], measurer,
                                       baseline=None, explanation=f"{rec.explanation} {verdict}"))


def _lab_decides(rec: Recommendation, lab: LabMeasurement, setter: Setter, measurer: Measurer,
                 job: str) -> Recommendation | None:
    """The lab's measurement of the rule's value against the current one (a grid on another pool of
    the same medium, so weaker than a probe of this one): a change only when it measured a gain
    beyond its noise; a measured loss keeps the current value; a draw keeps it and says how to
    measure here.  Where the rule keeps the current value, what the lab measured is said, not acted
    on.  None when the lab did not measure both values (the rule alone then decides)."""
    ev = lab.evidence
    show = partial(shown_value, ev.parameter)
    listing = (f"Measured in {lab.where}, run with {ev.parameter} "
               f"{', '.join(show(c.value) for c in ev.candidates)}: "
               + "; ".join(f"{show(c.value)}{' (its default there)' if c.baseline else ''}: {candidate_display(c)}"
                           for c in ev.candidates) + ".")
    evidence = [Evidence(fact=f"lab.{ev.parameter}.{c.value}.iops", value=round(c.iops, 1),
                         display=candidate_display(c), description=f"measured in {lab.where}")
                for c in ev.candidates]
    ruled = rec.recommended if rec.status == "change" else None
    current = rec.current
    if ruled is None or current is None:
        said = _lab_gain_elsewhere(rec, ev, show, measurer)
        return rec.model_copy(update={"evidence": rec.evidence + evidence,
                                      "explanation": " ".join(p for p in [rec.explanation, listing, said] if p)})
    old, new = lab_candidate(ev, current, rec), lab_candidate(ev, ruled, rec)
    if old is None or new is None or old.value == new.value:
        return None
    found = ev.ratio(new, old)
    if found is None:
        return None
    gain = Gain(found[0], found[1], "lab")
    said = (f"The lab measured {show(new.value)} at {pct(gain.ratio)} IOPS against {show(old.value)}"
            f"{_interval_text(gain)}")
    update: dict = {"evidence": rec.evidence + evidence, "source": "rule+lab" if gain.separated else "lab"}

    def explained(verdict: str) -> str:
        return " ".join(p for p in [rec.explanation, listing, verdict] if p)

    if gain.separated:
        update |= _change(rec, ruled, gain, setter, f"{job}, run in the lab")
        update["explanation"] = explained(f"{said}: the documentation and the lab agree, change it (and measure it "
                                          "here: a probe decides).")
    elif gain.interval is not None and gain.interval[1] < 1.0:
        update |= _keep(rec, "passed", [current, ruled], measurer, baseline=None,
                        explanation=explained(f"{said}: a loss beyond the run's noise, so keep {current}."))
        update["requirement"] = f"= {current} (the lab measured {ruled} lower)"
    else:
        update |= _keep(rec, "undecided", [current, ruled], measurer, baseline=None, explanation=explained(
            f"{said}, within the run's noise: keep {current} unless a probe of this pool shows a gain."))
        update["requirement"] = f"= {current} (the lab did not tell {ruled} from it)"
    return rec.model_copy(update=update)


def _lab_gain_elsewhere(rec: Recommendation, ev: ParameterEvidence, show: Callable[[str], str],
                        measurer: Measurer) -> str:
    """Where the rule keeps the current value but the lab measured another beyond its noise: said,
    with the probe that would tell on this pool (the lab's pool is not this one)."""
    current = rec.current
    old = lab_candidate(ev, current, rec) if current is not None else None
    if current is None or old is None:
        return ""
    better = [(found[0], found[1], c) for c in ev.candidates if c.value != old.value
              and (found := ev.ratio(c, old)) is not None and found[1] is not None and found[1][0] > 1.0]
    if not better:
        return ""
    ratio, interval, best = max(better, key=lambda x: x[0])
    command = measurer(rec, [current, show(best.value)])
    how = f" ({_command_text(command)})" if command else ""
    return (f"The lab measured {show(best.value)} at {pct(ratio)} IOPS against {show(old.value)} (90% interval "
            f"{span(interval)}), beyond its noise; the rule keeps {current} for the reasons above, and only a "
            f"measurement of this pool can say whether the gain holds here{how}.")


def lab_candidate(ev: ParameterEvidence, value: str, rec: Recommendation) -> CandidateEvidence | None:
    """The lab's candidate for a value: the same value; the lab's baseline for the module's default
    on this host (zfs_dirty_data_max's is 10 % of RAM, the lab VM's differs); else a measured value
    within a quarter of it (a size the rule derived from this pool's bandwidth)."""
    if (same := find(ev, value)) is not None:
        return same
    try:
        wanted = float(raw_value(rec, value))
    except ValueError:
        return None
    # host.dirty_data_max_default for zfs_dirty_data_max; the value shown rounded ("391.3M")
    default = next((e.value for e in rec.evidence
                    if e.fact.endswith(f".{rec.parameter.removeprefix('zfs_')}_default")), None)
    if isinstance(default, (int, float)) and default > 0 and abs(wanted / default - 1) < 0.001:
        return next((c for c in ev.candidates if c.baseline), None)
    near = [(abs(math.log(float(c.value) / wanted)), c) for c in ev.candidates
            if c.value.isdigit() and float(c.value) > 0 and wanted > 0]
    best = min(near, key=lambda x: x[0], default=None)
    return best[1] if best is not None and best[0] <= math.log(1.25) else None


def raw_value(rec: Recommendation, value: str) -> str:
    """A value as the module takes it: the exact number behind a rounded display ("391.3M") when
    the evidence shows it, else the display parsed ("64M")."""
    exact = next((e.value for e in rec.evidence if e.display == value and isinstance(e.value, int)
                  and not isinstance(e.value, bool)), None)
    if exact is not None:
        return str(exact)
    try:
        return str(parse_size(value))
    except ValueError:
        return value


def _rule_note(ruled: str, current: str, probe: ParameterEvidence | None, pred: ParameterPrediction | None) -> str:
    """What the evidence says of the rule's value, when it is not the proposal."""
    gain = _gain(current, ruled, probe, pred)
    if gain is None:
        return f"The rule's {ruled} was neither measured nor predicted here."
    ruled_pred = pred.candidate(ruled) if pred is not None else None
    tail = (f", but its write p99 is predicted {ruled_pred.write_p99_ratio:.1f}x the ZFS default's (the limit is "
            f"{WRITE_P99_TOLERANCE:g}x)" if ruled_pred is not None and not ruled_pred.feasible and ruled_pred.write_p99_ratio else "")
    return (f"The rule's {ruled} is {_by(gain)} {pct(gain.ratio)} {_metric(pred)} against the current {current}"
            f"{_interval_text(gain)}{tail}.")


def _latency_note(current: str | None, pred: ParameterPrediction) -> str:
    """Where the value kept is itself predicted past the write-p99 limit the model's picks respect:
    the trade it stands for, said (the answer keeps it: nothing within the limit matches its
    throughput, and a change needs a predicted gain), with the best value within the limit."""
    kept = pred.candidate(current)
    if kept is None or kept.feasible or not kept.write_p99_ratio:
        return ""
    metric = _metric(pred)
    said = (f"The current {current}'s write p99 is predicted {kept.write_p99_ratio:.1f}x the ZFS default's, beyond "
            f"the {WRITE_P99_TOLERANCE:g}x limit the model's picks respect: it is kept for its {metric}, which no value within the "
            "limit is predicted to match.")
    best, effect = pred.candidate(pred.best), pred.effect(current, pred.best)
    if best is None or not best.feasible or effect is None or same_value(pred.best, current):
        return said
    return (f"{said} Where write latency matters more than {metric}, {pred.best} is the best within it (write p99 "
            f"{best.write_p99_ratio or 1.0:.1f}x the default's, {pct(effect.ratio)} {metric} against {current}).")


def _tail(c) -> str:
    """A candidate whose write p99 is predicted beyond the limit the pick respects."""
    return "" if c.feasible or not c.write_p99_ratio else f", write p99 {c.write_p99_ratio:.1f}x the default's"


# --- the answer's fields ----------------------------------------------------------------------
def _change(rec: Recommendation, value: str, gain: Gain | None, setter: Setter, job: str) -> dict:
    command = setter(rec, value)
    argv = command if isinstance(command, list) else None
    apply = shlex.join(command) if isinstance(command, list) else command
    effect = None
    if gain is not None and gain.interval is not None:
        effect = ExpectedEffect(metric=gain.metric, change_ratio=round(gain.ratio, 3),
                                interval=(round(gain.interval[0], 3), round(gain.interval[1], 3)), measured_on=job)
    return {"recommended": value, "change": True, "status": "change", "apply": apply, "apply_argv": argv,
            "expected_effect": effect, "measure": None, "measure_argv": None, "measure_steps": None}


def _keep(rec: Recommendation, status: str, values: list[str], measurer: Measurer, baseline: str | None,
          explanation: str) -> dict:
    """Keep the current value: nothing to apply; an undecided item says how to decide, and a
    measurement of several steps what they do."""
    update: dict = {"recommended": rec.current, "change": False, "status": status, "apply": None,
                    "apply_argv": None, "apply_note": None, "expected_effect": None,
                    "measure": None, "measure_argv": None, "measure_steps": None, "explanation": explanation}
    if status == "undecided":
        compared = _distinct([baseline, *values] if baseline else values)
        command = measurer(rec, compared) if len(compared) > 1 else None
        if isinstance(command, Steps):
            update |= {"measure": command.text, "measure_steps": [list(a) for a in command.argvs],
                       "explanation": f"{explanation} {command.about}"}
        elif isinstance(command, list):
            update |= {"measure": shlex.join(command), "measure_argv": command}
        elif command is not None:
            update["measure"] = command
    return update


def _command_text(command: list[str] | str | Steps) -> str:
    if isinstance(command, Steps):
        return command.text
    return shlex.join(command) if isinstance(command, list) else command


def _distinct(values: Sequence[str | None]) -> list[str]:
    out: list[str] = []
    for v in values:
        if v and not any(same_value(v, o) for o in out):
            out.append(v)
    return out


def _baseline(probe: ParameterEvidence | None, pred: ParameterPrediction | None) -> str | None:
    """The ZFS default the model and the probes compare against: a probe should measure it too."""
    if pred is not None:
        return next((c.value for c in pred.candidates if c.baseline), None)
    return probe.baseline if probe is not None else None


def _source(rec: Recommendation, status: str, proposal: str, probe: ParameterEvidence | None,
            pred: ParameterPrediction | None) -> str:
    if pred is None or _measured(rec.current, proposal, probe) is not None:
        return "probe" if probe is not None else rec.source
    agrees = (same_value(proposal, rec.recommended) if rec.status == "change"
              else status != "change")  # a passing rule agrees with keeping
    return "rule+model" if agrees else "model"


def _by(gain: Gain) -> str:
    return "predicted" if gain.source == "model" else "measured"


def _metric(pred: ParameterPrediction | None) -> str:
    return "bandwidth" if pred is not None and pred.metric == "bandwidth" else "IOPS"


def _interval_text(gain: Gain) -> str:
    if gain.interval is None:
        return ", one repeat each: no interval"
    return f" (90% interval {span(gain.interval)})"


def _listings(ladder: Ladder, probe: ParameterEvidence | None, pred: ParameterPrediction | None) -> list[str]:
    out = []
    if probe is not None:
        listing = "; ".join(f"{c.value}: {candidate_display(c)}" for c in probe.candidates)
        out.append(f"Measured on {ladder.probe_where} (probe run {probe.run_id}, {probe.parameter} "
                   f"{', '.join(c.value for c in probe.candidates)}): {listing}.")
    if pred is not None:
        metric = _metric(pred)
        listing = "; ".join(f"{c.value}: {pct(c.ratio)} ({span(c.interval)}){_tail(c)}"
                            for c in pred.candidates if not c.baseline)
        default = next((c.value for c in pred.candidates if c.baseline), "the default")
        out.append(f"Predicted {metric} against the ZFS default ({default}), {_sources(pred)} "
                   f"(model {pred.model_version}): {listing}.")
    return out


def _local(pred: ParameterPrediction) -> str:
    """What of this pool the prediction is conditioned on: its probes, and the changes applied here
    whose measured effect the model read (advisor/model/change_samples.py)."""
    said = f"{pred.local_probes} probe{'s' if pred.local_probes != 1 else ''}"
    if pred.verified_changes:
        n = pred.verified_changes
        said += f" and {n} verified change{'s' if n != 1 else ''}"
    return said


def _sources(pred: ParameterPrediction) -> str:
    """What the prediction read: this pool's probes, its siblings' in the fleet (docs/fleet.md)
    with any that disagrees named, and the lab's runs."""
    sib = pred.siblings
    if sib is None:
        return f"from {_local(pred)} on this pool and {pred.lab_runs} lab runs"
    said = (f"from {_local(pred)} on this pool, {sib.probes} on {len(sib.pools)} sibling "
            f"pool{'s' if len(sib.pools) != 1 else ''} (instances {', '.join(sib.pools)}; fleet view "
            f"{sib.age_seconds:.0f} s old), {pred.lab_runs} lab runs")
    return said + "".join(f"; a sibling disagrees, {d}" for d in sib.disagreeing)


def _evidence(rec: Recommendation, ladder: Ladder, probe: ParameterEvidence | None,
              pred: ParameterPrediction | None) -> list[Evidence]:
    out = []
    if probe is not None:
        out += [Evidence(fact=f"probe.{probe.parameter}.{c.value}.iops", value=round(c.iops, 1),
                         display=candidate_display(c),
                         description=f"measured by probe run {probe.run_id} on {ladder.probe_where}")
                for c in probe.candidates]
    if pred is not None:
        where = f"{_sources(pred)} (model {pred.model_version})"
        out += [Evidence(fact=f"model.{pred.parameter}.{c.value}.ratio", value=round(c.ratio, 3),
                         display=f"{pct(c.ratio)} {_metric(pred)} ({span(c.interval)})",
                         description=f"predicted by the regression model {where}")
                for c in pred.candidates if not c.baseline]
    return out


def predicted_here(rec: Recommendation) -> bool:
    """Whether the model predicts this setting (a dataset property it was trained on)."""
    return rec.scope == "dataset" and rec.kind == "setting" and rec.pool is not None \
        and rec.parameter in PREDICTED_PARAMETERS
