"""Evaluate one rule against one context: applicable? current vs recommended? explain.

A rule is *not applicable* when a `when` clause is false (it is left out),
*skipped* when a fact it needs is unknown (reported, like `tuned-adm verify`'s
"skipped"), else *passed* or *change*. Nothing here evaluates code from the
rule files: clauses are comparisons, templates are plain fact names.
"""
from __future__ import annotations

import shlex
import string
from collections.abc import Mapping, Sequence
from typing import Any

from advisor.engine.catalogue import FactType, fact_def, render
from advisor.engine.context import Context
from advisor.engine.models import Evidence, Recommendation, Status
from advisor.engine.schema import Aggregate, Clause, FactRef, NeedsLoad, Rule, template_fields
from advisor.engine.units import parse_size

GENERAL_TITLE = "general-purpose"  # {workload.title} of an answer for no workload in particular
# What a command names where the answer does not know the value (several pools, no workload asked for).
_PLACEHOLDERS = {"pool.name": "POOL", "probe_workload": "WORKLOAD"}


class _Unknown(Exception):
    def __init__(self, facts: list[str]):
        super().__init__(", ".join(facts))
        self.facts = facts


def _fact(ctx: Context, name: str) -> Any:
    value = ctx.get(name)
    if value is None:
        raise _Unknown([name])
    return value


def value_of(expr: Any, ctx: Context) -> Any:
    if isinstance(expr, FactRef):
        return _fact(ctx, expr.fact)
    if isinstance(expr, Aggregate):
        items = [value_of(i, ctx) for i in (expr.max if expr.max is not None else expr.min or [])]
        return max(items) if expr.max is not None else min(items)
    return expr


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "eq":
        return left == right
    if op == "ne":
        return left != right
    if op == "in":
        return left in right
    if op == "not_in":
        return left not in right
    if op == "lt":
        return left < right
    if op == "le":
        return left <= right
    if op == "gt":
        return left > right
    if op == "ge":
        return left >= right
    raise ValueError(op)  # pragma: no cover - the schema allows only the ops above


def clause_holds(clause: Clause, ctx: Context) -> bool:
    """True/False, or raises _Unknown naming the facts that were missing."""
    if clause.any is not None:
        unknown: list[str] = []
        for sub in clause.any:
            try:
                if clause_holds(sub, ctx):
                    return True
            except _Unknown as exc:
                unknown += exc.facts
        if unknown:
            raise _Unknown(unknown)
        return False
    assert clause.fact and clause.op
    if clause.op == "known":
        return ctx.get(clause.fact) is not None
    if clause.op == "unknown":
        return ctx.get(clause.fact) is None
    left = _fact(ctx, clause.fact)
    right = _fact(ctx, clause.other) if clause.other else clause.value
    return _compare(clause.op, left, right)


def passes(rule: Rule, current: Any, recommended: Any) -> bool:
    if current in rule.accept:
        return True
    if rule.compare == "equal":
        return current == recommended
    if rule.compare == "at_least":
        return current >= recommended
    if rule.compare == "at_most":
        return current <= recommended
    assert rule.factor is not None
    return recommended / rule.factor <= current <= recommended * rule.factor


def requirement(rule: Rule, type_: FactType, shown_recommended: str) -> str:
    """What passes, in a few characters: '= 32K (or 64K, 128K)', '>= 12', 'within 10x of 2500000'."""
    if rule.compare == "at_least":
        text = f">= {shown_recommended}"
    elif rule.compare == "at_most":
        text = f"<= {shown_recommended}"
    elif rule.compare == "within_factor":
        text = f"within {rule.factor:g}x of {shown_recommended}"
    else:
        text = f"= {shown_recommended}"
    if rule.accept:
        shown = [render(type_, v) for v in rule.accept]
        if len(shown) > 6:
            shown = shown[:3] + [f"... {len(shown) - 4} more", shown[-1]]
        text += " (or " + ", ".join(shown) + ")"
    return text


class _Fields(string.Formatter):
    """Fills {fact.name} and {current}/{recommended}; `:raw` gives the unformatted value."""

    def __init__(self, ctx: Context, values: dict[str, tuple[Any, str]]):
        super().__init__()
        self.ctx = ctx
        self.values = values

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return key

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return field_name, field_name

    def format_field(self, name: str, spec: str) -> str:
        if name in self.values:
            raw, shown = self.values[name]
        else:
            raw = self.ctx.get(name)
            shown = self.ctx.rendered(name)
        if spec == "raw":
            return "unknown" if raw is None else (" ".join(map(str, raw)) if isinstance(raw, list) else str(raw))
        return shown


def fill(template: str, ctx: Context, values: dict[str, tuple[Any, str]]) -> str:
    template_fields(template)  # validated at load; cheap re-check
    return _Fields(ctx, values).format(template)


def _argv(rule: Rule, ctx: Context, values: dict[str, tuple[Any, str]]) -> list[str]:
    argv: list[str] = []
    for item in rule.apply or []:
        fields = template_fields(item)
        if len(fields) == 1 and item == "{" + fields[0][0] + "}" and isinstance(ctx.get(fields[0][0]), list):
            argv += [str(v) for v in ctx.get(fields[0][0])]  # a list fact splats into several arguments
        else:
            argv.append(fill(item, ctx, values))
    if ctx.new_dataset and argv[:2] == ["zfs", "set"] and len(argv) == 4:
        argv = ["zfs", "create", "-o", argv[2], argv[3]]
    return argv


def _measured_at(floor: Any, ctx: Context) -> bool:
    """The lab's prior was measured with the workload's fio job at the profile's block size: a floor
    equal to it is one the evidence already speaks for (the lab measured 4K records beating 8K for
    8 KiB pages on HDD raidz), so only another page size, one the evidence never saw, is a floor."""
    try:
        return ctx.workload is not None and floor == parse_size(ctx.workload.io.block_size)
    except ValueError:
        return False


def evaluate(rule: Rule, ctx: Context) -> Recommendation | None:
    """The rule's verdict for this context, or None when it does not apply."""
    role = ctx.get("workload.role")
    if rule.roles is not None and role not in rule.roles:
        return None
    try:
        for clause in rule.when:
            if not clause_holds(clause, ctx):
                return None
    except _Unknown as exc:
        return _skipped(rule, ctx, exc.facts)
    try:
        current = _fact(ctx, rule.current.fact)
        recommended = value_of(rule.recommended, ctx)
        floor = value_of(rule.at_least, ctx) if rule.at_least is not None else None
    except _Unknown as exc:
        return _skipped(rule, ctx, exc.facts)

    definition = fact_def(rule.current.fact)
    assert definition is not None
    shown_current, shown_recommended = render(definition.type, current), render(definition.type, recommended)
    ok = passes(rule, current, recommended)
    status: Status = "passed" if ok else "change"
    title = ctx.workload.title if ctx.workload else GENERAL_TITLE
    name = ctx.workload.name if ctx.workload else None
    values = {
        "current": (current, shown_current),
        "recommended": (recommended, shown_recommended),
        "workload.title": (title, title),
        "probe_workload": (name, name or "unknown"),
    }
    apply, argv = None, None
    if rule.apply and not ok:
        tokens = _argv(rule, ctx, values)
        if rule.apply_shell:
            apply = " ".join(tokens)
        else:
            argv, apply = tokens, shlex.join(tokens)
    rec = Recommendation(
        parameter=rule.parameter,
        scope=rule.scope,
        current=shown_current,
        recommended=shown_recommended,
        requirement=requirement(rule, definition.type, shown_recommended),
        change=not ok,
        status=status,
        kind=rule.kind,
        confidence=rule.confidence,
        rule=rule.id,
        title=rule.title,
        explanation=fill(rule.explanation.ok if ok else rule.explanation.change, ctx, values),
        sources_disagree=fill(rule.sources_disagree, ctx, values) if rule.sources_disagree else None,
        evidence=_evidence(rule, ctx),
        apply=apply,
        apply_argv=argv,
        apply_note=fill(rule.apply_note, ctx, values) if rule.apply_note and not ok else None,
        effect=rule.effect,
        reversible=rule.reversible,
        references=[str(r) for r in rule.references],
        pool=ctx.pool.name if ctx.pool and rule.scope != "module" else None,
        dataset=ctx.get("dataset.name") if rule.scope == "dataset" else None,
    )
    if rule.at_least is not None and not _measured_at(floor, ctx):
        described = fact_def(rule.at_least.fact)
        rec._at_least = (render(definition.type, floor), described.description if described else rule.at_least.fact)
    if rule.needs_load and not ok and not _load_seen(rule.needs_load, ctx):
        return _undecided(rec, rule.needs_load, ctx, values)
    return rec


def _load_seen(needs: NeedsLoad, ctx: Context) -> bool:
    """True when the host showed the load; a fact it did not report shows nothing."""
    try:
        return all(clause_holds(clause, ctx) for clause in needs.when)
    except _Unknown:
        return False


def _undecided(rec: Recommendation, needs: NeedsLoad, ctx: Context, values: dict[str, tuple[Any, str]]) -> Recommendation:
    """The change a rule would size from load the host did not show: keep the current value, measure.

    A value the answer does not know appears in the command as a placeholder (POOL, WORKLOAD): the
    text still says what to run, but there is no argv to run as it stands."""
    unknown = {name for item in needs.measure for name, _ in template_fields(item)
               if (values[name][0] if name in values else ctx.get(name)) is None}
    placeholders = {name: (_placeholder(name), _placeholder(name)) for name in unknown}
    argv = [fill(item, ctx, values | placeholders) for item in needs.measure]
    return rec.model_copy(update={
        "status": "undecided", "change": False, "recommended": rec.current, "apply": None, "apply_argv": None,
        "apply_note": None, "explanation": fill(needs.explanation, ctx, values),
        "measure": shlex.join(argv), "measure_argv": None if unknown else argv,
    })


def _placeholder(name: str) -> str:
    return _PLACEHOLDERS.get(name, name.rsplit(".", 1)[-1].upper())


def _evidence(rule: Rule, ctx: Context) -> list[Evidence]:
    out = []
    for name in rule.facts():
        value = ctx.get(name)
        definition = fact_def(name)
        if value is None or definition is None or name.startswith("workload."):
            continue
        out.append(Evidence(fact=name, value=value, display=render(definition.type, value), description=definition.description))
    return out


def _skipped(rule: Rule, ctx: Context, missing: list[str]) -> Recommendation:
    names = list(dict.fromkeys(n for name in missing for n in ctx.unknown_inputs(name)))
    described = "; ".join(f"{n} ({d.description})" if (d := fact_def(n)) else n for n in names)
    return Recommendation(
        parameter=rule.parameter,
        scope=rule.scope,
        current=None,
        recommended=None,
        change=False,
        status="skipped",
        kind=rule.kind,
        confidence=rule.confidence,
        rule=rule.id,
        title=rule.title,
        explanation=f"Not evaluated: this host did not report {described}.",
        evidence=_evidence(rule, ctx),
        apply=None,
        effect=rule.effect,
        reversible=rule.reversible,
        references=[str(r) for r in rule.references],
        pool=ctx.pool.name if ctx.pool and rule.scope != "module" else None,
        dataset=ctx.get("dataset.name") if rule.scope == "dataset" else None,
        skipped_reason="missing facts: " + ", ".join(names),
    )
