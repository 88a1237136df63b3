"""A `RecommendResponse` as a POSIX shell script to review and run: `zfs-advisor recommend --format script`.

Each change is its exact command (the answer's `apply_argv`, shell-quoted; a module parameter's
sysfs write as the answer gives it), after comments saying what it sets, why and on whose word.
Module parameters written to sysfs last until the module is reloaded: the lines that keep them
(modprobe.d(5), zfs(4)) follow as comments. Values to keep, settings still to be measured and
items not evaluated appear as comments only. Every text of the answer goes through `_comment`,
which wraps it onto lines that each start with `#`: no text of the answer can become a command.
"""
from __future__ import annotations

import shlex
import textwrap

from advisor.engine.decide import raw_value
from advisor.engine.models import EFFECT_TEXT, GENERAL, Recommendation, RecommendResponse
from advisor.engine.text import where

WIDTH = 100
MODPROBE_CONF = "/etc/modprobe.d/zfs.conf"


def _comment(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=f"# {indent}", subsequent_indent=f"# {indent}",
                         break_on_hyphens=False, break_long_words=False) or ["#"]


def command_of(rec: Recommendation) -> str | None:
    """The line that applies a change: its argv quoted, or a module parameter's sysfs write."""
    if rec.apply_argv:
        return shlex.join(rec.apply_argv)
    if rec.scope == "module" and rec.apply:
        return rec.apply  # a shell line on purpose: the redirection writes the parameter
    return None


def _about(rec: Recommendation) -> list[str]:
    lines = _comment(f"{rec.title}. Rule {rec.rule}, source {rec.source}, confidence {rec.confidence:.2f}.", "  ")
    lines += _comment(rec.explanation, "  ")
    if rec.sources_disagree:
        lines += _comment("Sources disagree: " + rec.sources_disagree, "  ")
    if rec.apply_note:
        lines += _comment("Note: " + rec.apply_note, "  ")
    lines += _comment(f"Takes effect {EFFECT_TEXT[rec.effect]}; reversible: {rec.reversible}", "  ")
    return lines + [f"#   see {ref}" for ref in rec.references]


def _changes(recs: list[Recommendation]) -> list[str]:
    lines: list[str] = []
    done: set[str] = set()
    for rec in recs:
        lines += [""] + _comment(f"CHANGE {rec.parameter}{where(rec)}: {rec.current} -> {rec.recommended}")
        lines += _about(rec)
        command = command_of(rec)
        if command is None:
            lines += _comment(f"No command: {rec.apply or 'this advice is carried out by hand'}", "  ")
        elif command in done:  # a new dataset's one `zfs create` sets all its properties
            lines += _comment(f"Set by the command above: {command}", "  ")
        else:
            lines.append(command)
            done.add(command)
    return lines


def _persistent(recs: list[Recommendation]) -> list[str]:
    options = [f"options zfs {r.parameter}={raw_value(r, r.recommended)}" for r in recs
               if r.scope == "module" and command_of(r) and r.recommended]
    if not options:
        return []
    return ["", *_comment(f"The module parameters above hold until the zfs module is reloaded. To keep them, put "
                          f"these lines in {MODPROBE_CONF} (modprobe.d(5), zfs(4)):"),
            *[f"#   {line}" for line in options]]


def _kept(rec: Recommendation) -> list[str]:
    what = f"{rec.parameter}{where(rec)}"
    if rec.status == "undecided":
        lines = _comment(f"MEASURE {what}: keep {rec.current} until measured. {rec.explanation}")
        if rec.measure_steps:
            return lines + _comment("To decide, run, each step once the one before has succeeded:", "  ") + [
                line for n, step in enumerate(rec.measure_steps, 1) for line in _comment(f"{n}. {shlex.join(step)}", "    ")]
        return lines + (_comment(f"To decide, run: {rec.measure}", "  ") if rec.measure else [])
    if rec.status == "passed":
        return _comment(f"keep {what}: {rec.current} ({rec.requirement}). Rule {rec.rule}.")
    if rec.status == "info":
        return _comment(f"measured {what}: {rec.current}. {rec.explanation}")
    return _comment(f"not evaluated {what}: {rec.skipped_reason or rec.explanation}")


def recommend_script(response: RecommendResponse, invocation: list[str]) -> str:
    """`invocation`: the command line that asked (named in the header, so the script says how to remake it)."""
    target = response.target
    about = "any workload" if response.workload == GENERAL else f"workload {response.workload} (" + ", ".join(
        f"{k}={v}" for k, v in response.parameters.items()) + ")"
    on = [f"pool {target.pool}"] if target.pool else []
    on += [f"{'new ' if target.new_dataset else ''}dataset {target.dataset}"] if target.dataset else []
    facts = response.facts
    lines = ["#!/bin/sh", *_comment(
        f"What zfs-advisor advises for {about}{' on ' + ', '.join(on) if on else ''}: host "
        f"{facts.get('hostname') or '?'}, OpenZFS {facts.get('zfs_version') or '?'}, generated "
        f"{response.generated_at.isoformat(timespec='seconds')} by: {shlex.join(invocation)}"),
        *_comment("Review it before running it as root. Each change says what it sets, why, and its sources; "
                  "values to keep and settings still to be measured are comments only."),
        "set -eu"]
    changes = [r for r in response.recommendations if r.status == "change"]
    lines += _changes(changes) if changes else ["", "# Nothing to change."]
    lines += _persistent(changes)
    rest = [r for status in ("undecided", "info", "passed", "skipped")
            for r in response.recommendations if r.status == status]
    if rest:
        lines += ["", "# Not changed by this script:"]
        for rec in rest:
            lines += _kept(rec)
    return "\n".join(lines) + "\n"
