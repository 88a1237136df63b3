"""A recommendation as HTML, with everything /recommend says of it: status, current -> proposed,
title, explanation, evidence, expected effect with its interval, the command, references."""
from __future__ import annotations

import shlex

from advisor.engine.models import EFFECT_TEXT, Recommendation
from advisor.engine.text import APPLICATION_CAVEAT, metric_name, where
from advisor.page.gather import Answer
from advisor.page.markup import esc

LABEL = {"change": "change", "undecided": "measure", "passed": "passed", "skipped": "skipped"}


def _value(rec: Recommendation) -> str:
    current = f"<code>{esc(rec.current if rec.current is not None else 'unknown')}</code>"
    if rec.status == "change":
        return f"{current} &rarr; <code>{esc(rec.recommended)}</code>"
    if rec.status == "undecided":
        return f"keep {current} until measured"
    if rec.status == "passed":
        return f"{current}" + (f" ({esc(rec.requirement)})" if rec.requirement else "")
    return f"not evaluated: {esc(rec.skipped_reason or 'no reason given')}"


def _effect(rec: Recommendation) -> str:
    effect = rec.expected_effect
    if effect is None:
        return ""
    lo, hi = effect.interval
    return (f"<p>Expected effect: {esc(metric_name(effect.metric))} &times;{effect.change_ratio:.2f} "
            f"(90% interval &times;{lo:.2f} to &times;{hi:.2f}) of {esc(effect.measured_on)}; "
            f"{APPLICATION_CAVEAT}</p>"  # a constant of the engine, no markup in it
            + (f"<p>On the application: {esc(effect.application_bound.text)}</p>" if effect.application_bound else ""))


def _command(label: str, command: str | None) -> str:
    return f"<p>{label}: <code>{esc(command)}</code></p>" if command else ""


def _steps(steps: list[list[str]]) -> str:
    items = "".join(f"<li><code>{esc(shlex.join(step))}</code></li>" for step in steps)
    return f"<p>Measure, each step once the one before has succeeded:</p><ol>{items}</ol>"


def recommendation(rec: Recommendation) -> str:
    parts = [f'<article class="rec {esc(rec.status)}"><h4><span class="badge {esc(rec.status)}">'
             f"{esc(LABEL[rec.status])}</span> {esc(rec.parameter)}{esc(where(rec))} "
             f'<span class="muted">[{esc(rec.scope)}]</span></h4>',
             f"<p>{_value(rec)}</p>", f"<p><strong>{esc(rec.title)}.</strong> {esc(rec.explanation)}</p>"]
    if rec.sources_disagree:
        parts.append(f"<p>Sources disagree: {esc(rec.sources_disagree)}</p>")
    parts.append(_effect(rec))
    if rec.status == "change":
        parts.append(_command("Apply", rec.apply))
        if rec.apply_note:
            parts.append(f"<p>Note: {esc(rec.apply_note)}</p>")
        parts.append(f"<p>Takes effect {esc(EFFECT_TEXT[rec.effect])}; reversible: {esc(rec.reversible)}</p>")
    if rec.status == "undecided":
        parts.append(_steps(rec.measure_steps) if rec.measure_steps else _command("Measure", rec.measure))
    if rec.evidence and rec.status != "skipped":
        items = "".join(f"<li><code>{esc(e.fact)}</code> = {esc(e.display)}: {esc(e.description)}</li>"
                        for e in rec.evidence)
        parts.append(f"<p>Evidence:</p><ul>{items}</ul>")
    refs = "".join(f'<li><a href="{esc(ref)}" rel="noreferrer">{esc(ref)}</a></li>'
                   if ref.startswith(("https://", "http://")) else f"<li>{esc(ref)}</li>" for ref in rec.references)
    parts.append(f'<p class="muted">rule {esc(rec.rule)}, confidence {rec.confidence:.2f}, source '
                 f"{esc(rec.source)}</p>" + (f'<ul class="muted">{refs}</ul>' if refs else ""))
    return "".join(parts) + "</article>"


def answer_section(answer: Answer, shown: set[tuple] | None = None, full_answer: str | None = None) -> str:
    """The open recommendations of an answer in full, the rest (passed, skipped) folded away, or
    only counted with a link to `full_answer` (a dataset's: at 1,000 datasets they were megabytes);
    those whose key is in `shown` (already on the page) are left out and the others added to it."""
    if answer.response is None:
        return f'<p class="muted">No answer: {esc(answer.error)}</p>'
    recs = answer.response.recommendations
    if shown is not None:
        recs = [r for r in recs if _key(r) not in shown]
        shown.update(_key(r) for r in recs)
    open_recs = [r for r in recs if r.status in ("change", "undecided")]
    rest = [r for r in recs if r.status not in ("change", "undecided")]
    html = "".join(recommendation(r) for r in open_recs) or "<p>Nothing open: no change to make or measure.</p>"
    passed = sum(r.status == "passed" for r in rest)
    counts = f"{passed} passed, {len(rest) - passed} skipped"
    if full_answer is not None:
        html += f'<p class="muted">{counts}: <a href="{esc(full_answer)}">the whole answer</a></p>'
    elif rest:
        html += f"<details><summary>{counts}</summary>" + "".join(recommendation(r) for r in rest) + "</details>"
    return html


def _key(rec: Recommendation) -> tuple:
    """The same item with the same conclusion (a workload's probe may conclude otherwise)."""
    return rec.rule, rec.parameter, rec.scope, rec.pool, rec.dataset, rec.status, rec.recommended
