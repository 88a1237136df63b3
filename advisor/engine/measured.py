"""Probe measurements meet the rules: confirm or overrule a dataset setting with what this pool did.

Pure: it takes the rules' recommendations and the probe evidence of the pools they are about
(advisor/probe/evidence.py, read from the store by the caller) and returns the recommendations
with `source: probe`, the measured `expected_effect` and the numbers in the explanation.

The measured best is the candidate with the most IOPS whose write p99 is no worse than 1.5x the
ZFS default's (read-modify-write shows in the write tail first). It overrules the rule's value
only when the probe tells the two apart (the 90 % interval of their IOPS ratio, from the
repeats of the run pooled, excludes 1: advisor/probe/interval.py); otherwise the rule's value
stands and the explanation says the probe could not separate them.
"""
from __future__ import annotations

import shlex

from advisor.engine.models import Evidence, ExpectedEffect, Recommendation
from advisor.engine.units import parse_size
from advisor.probe.evidence import CandidateEvidence, ParameterEvidence

WRITE_P99_TOLERANCE = 1.5


def same_value(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    try:
        return parse_size(a) == parse_size(b)
    except ValueError:
        return a.strip().lower() == b.strip().lower()


def measured_best(ev: ParameterEvidence) -> CandidateEvidence:
    base = next((c for c in ev.candidates if c.baseline), None)
    limit = (base.write_p99_seconds * WRITE_P99_TOLERANCE
             if base is not None and base.write_p99_seconds else None)
    for c in ev.candidates:  # ranked by IOPS
        if limit is None or c.write_p99_seconds is None or c.write_p99_seconds <= limit:
            return c
    return ev.candidates[0]


def _find(ev: ParameterEvidence, value: str | None) -> CandidateEvidence | None:
    return next((c for c in ev.candidates if same_value(c.value, value)), None)


def _effect(ev: ParameterEvidence, new: CandidateEvidence, old: CandidateEvidence) -> ExpectedEffect | None:
    found = ev.ratio(new, old)
    if found is None or found[1] is None:
        return None
    ratio, (low, high) = found
    return ExpectedEffect(metric="iops", change_ratio=round(ratio, 3), interval=(round(low, 3), round(high, 3)))


def _display(c: CandidateEvidence) -> str:
    p99 = f", write p99 {c.write_p99_seconds * 1000:.1f} ms" if c.write_p99_seconds is not None else ""
    spread = f"{c.repeats} repeats {c.iops_min:,.0f}..{c.iops_max:,.0f}"
    if c.run_interval is not None:
        spread += f", a run 90 % within {c.run_interval[0]:,.0f}..{c.run_interval[1]:,.0f}"
    return f"{c.iops:,.0f} IOPS ({spread}){p99}"


def apply_measurements(recs: list[Recommendation], measured: dict[str, list[ParameterEvidence]],
                       new_datasets: frozenset[str] = frozenset()) -> list[Recommendation]:
    """`measured`: pool name -> the evidence of its probes for the workload asked about;
    `new_datasets`: the proposed datasets that do not exist yet (created, not set)."""
    return [_apply(rec, measured.get(rec.pool or "", []), new_datasets) for rec in recs]


def _apply(rec: Recommendation, evidence: list[ParameterEvidence], new_datasets: frozenset[str]) -> Recommendation:
    ev = next((e for e in evidence if e.parameter == rec.parameter), None)
    if rec.scope != "dataset" or rec.kind != "setting" or ev is None or not ev.candidates:
        return rec
    best = measured_best(ev)
    ruled = _find(ev, rec.recommended)
    current = _find(ev, rec.current)
    choice, verdict = best, ""
    if ruled is None:
        verdict = f"The rule's value {rec.recommended} was not probed; the measured best is {best.value}."
    elif ruled.value == best.value:
        verdict = f"The probe confirms the rule: {best.value} measured best."
    elif not ev.separated(best, ruled):
        choice = ruled
        why = ("the 90 % interval of their IOPS ratio includes 1" if ev.repeat_log_sd is not None
               else "one repeat each: no interval to tell them apart")
        verdict = (f"The probe could not separate {best.value} from the rule's {ruled.value} ({why}), "
                   "so the rule's value stands.")
    else:
        verdict = f"The measurement overrules the rule, which said {ruled.value}: {best.value} measured best."
    listing = "; ".join(f"{c.value}: {_display(c)}" for c in ev.candidates)
    explanation = (f"{rec.explanation} Measured on this pool (probe run {ev.run_id}, {ev.parameter} "
                   f"{', '.join(c.value for c in ev.candidates)}): {listing}. {verdict}")
    facts = [Evidence(fact=f"probe.{ev.parameter}.{c.value}.iops", value=round(c.iops, 1), display=_display(c),
                      description=f"measured by probe run {ev.run_id} on pool {rec.pool}")
             for c in ev.candidates]
    update: dict = {"source": "probe", "explanation": explanation, "evidence": rec.evidence + facts}
    if current is not None:
        update["expected_effect"] = _effect(ev, choice, current)
    if not same_value(choice.value, rec.recommended):
        change = not same_value(choice.value, rec.current)
        argv = _command(rec, choice.value, new_datasets) if change else None
        update |= {"recommended": choice.value, "change": change, "status": "change" if change else "passed",
                   "apply": shlex.join(argv) if argv else None, "apply_argv": argv}
    return rec.model_copy(update=update)


def _command(rec: Recommendation, value: str, new_datasets: frozenset[str]) -> list[str] | None:
    if rec.dataset is None:
        return None
    if rec.dataset in new_datasets:
        return ["zfs", "create", "-o", f"{rec.parameter}={value}", rec.dataset]
    return ["zfs", "set", f"{rec.parameter}={value}", rec.dataset]


# --- module parameters (scope "module") ------------------------------------------------------
PARAMS_DIR = "/sys/module/zfs/parameters"


def apply_module_measurements(recs: list[Recommendation], measured: dict[str, list[ParameterEvidence]]
                              ) -> list[Recommendation]:
    """Module parameters measured by a probe (`--param zfs_txg_timeout=5,30`, scope "module") get
    the same treatment as dataset properties: `source: probe`, the candidates as evidence, the
    measured `expected_effect`, and the rule's value overruled when the repeats tell them apart.

    A module parameter is host-wide, a probe is of one pool: `measured` holds the evidence of the
    pools the answer is about (pool name -> evidence); the latest run that measured the
    parameter on any of them is used, and the explanation names its pool."""
    latest: dict[str, tuple[str, ParameterEvidence]] = {}
    for pool, evidence in sorted(measured.items()):
        for ev in evidence:
            if ev.candidates and (ev.parameter not in latest or ev.run_id > latest[ev.parameter][1].run_id):
                latest[ev.parameter] = (pool, ev)
    return [_apply_module(rec, *latest[rec.parameter])
            if rec.scope == "module" and rec.kind == "setting" and rec.parameter in latest else rec for rec in recs]


def _apply_module(rec: Recommendation, pool: str, ev: ParameterEvidence) -> Recommendation:
    """The dataset treatment (`_apply`) on the recommendation seen as one about `pool`, then put
    back as the module's: no dataset command, the sysfs write instead."""
    as_dataset = rec.model_copy(update={"scope": "dataset", "pool": pool, "dataset": None})
    done = _apply(as_dataset, [ev], frozenset())
    update: dict = {"scope": rec.scope, "pool": rec.pool, "dataset": rec.dataset,
                    "explanation": done.explanation.replace("Measured on this pool",
                                                            f"Measured on pool {pool} (set only while the probe ran)")}
    if done.recommended != rec.recommended:
        update["apply"] = f"echo {done.recommended} > {PARAMS_DIR}/{rec.parameter}" if done.change else None
        update["apply_argv"] = None
    return done.model_copy(update=update)
