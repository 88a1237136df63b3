"""Readable text of a `RecommendResponse`: /recommend?format=text, `zfs-advisor recommend` and `verify`.

The text carries the same content as the JSON (every recommendation, its
reasons, command and references), laid out for a terminal.
"""
from __future__ import annotations

import shlex
import textwrap

from advisor.engine.models import EFFECT_TEXT, GENERAL, Recommendation, RecommendResponse

WIDTH = 100
_LABEL = {"change": "CHANGE", "undecided": "MEASURE", "passed": "passed", "skipped": "skipped", "info": "info"}


def _wrap(text: str, indent: str = "        ") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False) or [indent]


def where(rec: Recommendation) -> str:
    """Where it applies: " on tank/pg", " on pool tank", or "" (module parameters are host-wide)."""
    if rec.scope == "dataset" and rec.dataset:
        return f" on {rec.dataset}"
    if rec.scope in ("pool", "pool-create") and rec.pool:
        return f" on pool {rec.pool}"
    return ""


# What an expected effect does not say: said beside it in the text answer and on the page.
APPLICATION_CAVEAT = "the application's own metric moves only as far as it waits on the storage: measure it before and after"


def metric_name(metric: str) -> str:
    return "IOPS" if metric == "iops" else metric


def _effect_lines(rec: Recommendation) -> list[str]:
    effect = rec.expected_effect
    if effect is None:
        return []
    lo, hi = effect.interval
    lines = _wrap(f"expected effect: {metric_name(effect.metric)} x{effect.change_ratio:.2f} (90% x{lo:.2f}..x{hi:.2f}) "
                  f"of {effect.measured_on}; {APPLICATION_CAVEAT}")
    return lines + (_wrap(f"on the application: {effect.application_bound.text}") if effect.application_bound else [])


def recommendation_lines(rec: Recommendation) -> list[str]:
    if rec.status == "change":
        value = f"{rec.current} -> {rec.recommended}"
    elif rec.status == "passed":
        value = f"{rec.current} ({rec.requirement})"
    elif rec.status == "undecided":
        value = f"keep {rec.current} until measured"
    elif rec.status == "info":
        value = f"{rec.current}"
    else:
        value = "not evaluated"
    head = f"{_LABEL[rec.status]:7} [{rec.scope}] {rec.parameter}{where(rec)}: {value}"
    lines = [head, *_wrap(f"{rec.title}. (rule {rec.rule}, confidence {rec.confidence:.2f}, source {rec.source})")]
    lines += _wrap(rec.explanation)
    if rec.sources_disagree:
        lines += _wrap("Sources disagree: " + rec.sources_disagree)
    lines += _effect_lines(rec)
    if rec.status == "change":
        if rec.apply:
            lines += _wrap("apply: " + rec.apply)
        if rec.apply_note:
            lines += _wrap("note: " + rec.apply_note)
        lines += _wrap(f"takes effect {EFFECT_TEXT[rec.effect]}; reversible: {rec.reversible}")
    if rec.status == "undecided":
        lines += _measure_lines(rec)
    if rec.status == "info" and rec.measure:
        lines += _wrap("measure again: " + rec.measure)
    if rec.evidence and rec.status != "skipped":
        lines += _wrap("evidence: " + "; ".join(f"{e.fact}={e.display}" for e in rec.evidence))
    lines += [f"        see: {ref}" for ref in rec.references]
    return lines


def _measure_lines(rec: Recommendation) -> list[str]:
    """How to decide: one command, or steps (a zvol's volblocksize), one a line."""
    if rec.measure_steps:
        return _wrap("measure, each step once the one before has succeeded:") + [
            line for n, step in enumerate(rec.measure_steps, 1) for line in _wrap(f"{n}. {shlex.join(step)}", " " * 10)]
    return _wrap("measure: " + rec.measure) if rec.measure else []


def _heading(response: RecommendResponse) -> list[str]:
    """What was asked about which host, the tally of the answer, and the datasets recognised."""
    target = response.target
    where = []
    if target.pool:
        where.append(f"pool {target.pool}")
    if target.dataset:
        where.append(f"{'new ' if target.new_dataset else ''}dataset {target.dataset}")
    params = ", ".join(f"{k}={v}" for k, v in response.parameters.items())
    facts = response.facts
    general = response.workload == GENERAL
    measured = sum(r.status == "info" for r in response.recommendations)
    lines = [
        ("zfs-advisor: general recommendations, for any workload" if general
         else f"zfs-advisor: recommendations for workload {response.workload} ({params})")
        + (f" on {', '.join(where)}" if where else ""),
        f"host {facts.get('hostname') or '?'}, OpenZFS {facts.get('zfs_version') or '?'}, generated "
        f"{response.generated_at.isoformat(timespec='seconds')}",
        f"{response.summary.change} to change, "
        + (f"{response.summary.undecided} to measure, " if response.summary.undecided else "")
        + f"{response.summary.passed} passed, {response.summary.skipped} skipped"
        + (f", {measured} measured" if measured else ""),
    ]
    for seen in response.recognised or []:
        lines.append(f"dataset {seen.dataset}: recognised as {seen.workload}"
                     + (f" ({seen.role}, confidence {seen.confidence:.2f})" if seen.role else "")
                     + f" - {seen.reason}" + ("" if seen.used else "; pool-level advice only"))
    return lines


def recommend_text(response: RecommendResponse) -> str:
    target, facts, general = response.target, response.facts, response.workload == GENERAL
    lines = _heading(response)
    if response.probe_store:
        lines += _wrap(f"probe results: not read, so none of this answer comes from them ({response.probe_store})", "")
    if response.model is not None:
        model = response.model
        lines.append(f"regression model {model.version}, fitted on {model.lab_runs} lab runs" if model.available
                     else f"regression model: none ({model.reason})")
    if facts.get("zfs_present") is False:
        lines.append(f"ZFS: absent ({facts.get('zfs_absent_reason') or 'no reason given'}); nothing can be checked")
    if general:
        lines += _wrap(
            "No workload given: pool layout, ashift, health, free space and module parameters, judged by the "
            "rules that hold for every workload. --workload NAME (&workload=NAME) adds dataset properties and "
            "the advice that depends on the workload.",
            "",
        )
    if target.new_dataset:
        lines += _wrap(
            f"No dataset given: advice is for a new dataset {target.dataset}, judged by what it would inherit "
            f"from {target.pool}; one command creates it with every change below.",
            "",
        )
        if target.create:
            lines += _wrap(f"create: {target.create}", "")
    for status in ("change", "undecided", "info", "passed", "skipped"):
        for rec in response.recommendations:
            if rec.status == status:
                lines += [""] + recommendation_lines(rec)
    return "\n".join(lines) + "\n"


def verify_lines(response: RecommendResponse) -> list[str]:
    """tuned-adm verify style: one line per check, passed / failed (expected X) / skipped; a measurement
    the answer cites (status info) is a line of its own, never a failure."""
    lines = []
    for rec in response.recommendations:
        what = f"{rec.parameter}{where(rec)}"
        if rec.status == "passed":
            lines.append(f"verify: passed: {what}: {rec.current}")
        elif rec.status == "change":
            lines.append(f"verify: failed: {what}: {rec.current} (expected {rec.requirement}) [{rec.rule}]")
        elif rec.status == "undecided":
            lines.append(f"verify: undecided: {what}: {rec.current} (measure: {rec.measure or 'a probe'}) [{rec.rule}]")
        elif rec.status == "info":
            lines.append(f"verify: info: {what}: {rec.current} (measure again: {rec.measure}) [{rec.rule}]")
        else:
            lines.append(f"verify: skipped: {what}: {rec.skipped_reason}")
    return lines
