"""The schema of rules (rules/*.yaml) and workload profiles (rules/workloads/*.yaml).

Both are data, validated here when they are loaded: a misspelt key, a fact
name the catalogue does not know, a constant of the wrong type or a reference
that is not an https URL stops start-up with the file and rule named.

The condition language is deliberately small and cannot run code:

    when:                         # every clause must hold (AND)
      - {fact: pool.media, op: in, value: [hdd, mixed]}
      - {fact: pool.ashift_min, op: lt, other: pool.physical_shift_max}
      - any:                      # at least one of these (OR)
          - {fact: workload.sync, op: eq, value: heavy}
          - {fact: workload.name, op: eq, value: vm}

Values are constants, other facts, or `{max: [...]}` / `{min: [...]}` of those.
"""
from __future__ import annotations

import re
import string
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from advisor.engine.catalogue import FactType, coerce, fact_def
from advisor.engine.models import Effect, Scope
from advisor.engine.units import parse_size
from advisor.hostmodel.tunables import REFERENCE_HOSTS

SLUG = r"^[a-z0-9][a-z0-9-]{1,62}$"
Op = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "known", "unknown"]
Compare = Literal["equal", "at_least", "at_most", "within_factor"]
# Placeholders a template may use besides fact names (`probe_workload`: the workload asked for, for a
# probe command; WORKLOAD in a general answer).
TEMPLATE_EXTRAS = ("current", "recommended", "workload.title", "probe_workload")
_FORMATS = ("", "raw")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _known_fact(name: str) -> FactType:
    definition = fact_def(name)
    if definition is None:
        raise ValueError(f"unknown fact {name!r} (docs/rules.md lists the facts rules may name)")
    return definition.type


_NUMERIC = ("bytes", "int", "float", "ratio", "seconds")


def _same_kind(a: str, b: str) -> None:
    """Two facts compared with each other must both be numbers, or have the same type."""
    ta, tb = _known_fact(a), _known_fact(b)
    if ta != tb and not (ta in _NUMERIC and tb in _NUMERIC):
        raise ValueError(f"{a} ({ta}) cannot be compared with {b} ({tb})")


class FactRef(Strict):
    fact: str

    @field_validator("fact")
    @classmethod
    def _exists(cls, v: str) -> str:
        _known_fact(v)
        return v


class Aggregate(Strict):
    max: list[FactRef | int | float | str] | None = None
    min: list[FactRef | int | float | str] | None = None

    @model_validator(mode="after")
    def _one(self) -> Aggregate:
        if (self.max is None) == (self.min is None):
            raise ValueError("give exactly one of max or min")
        return self


ValueExpr = FactRef | Aggregate | bool | int | float | str


class Clause(Strict):
    fact: str | None = None
    op: Op | None = None
    value: Any = None
    other: str | None = None
    any: list[Clause] | None = None

    @model_validator(mode="after")
    def _shape(self) -> Clause:
        if self.any is not None:
            if self.fact or self.op or self.value is not None or self.other:
                raise ValueError("an `any:` clause holds only its list of clauses")
            if not self.any:
                raise ValueError("`any:` needs at least one clause")
            return self
        if not self.fact or not self.op:
            raise ValueError("a clause needs `fact` and `op` (or `any`)")
        type_ = _known_fact(self.fact)
        if self.op in ("known", "unknown"):
            if self.value is not None or self.other:
                raise ValueError(f"op {self.op} takes no value")
            return self
        if (self.value is None) == (self.other is None):
            raise ValueError("give exactly one of `value` or `other` (another fact)")
        if self.other:
            _same_kind(self.fact, self.other)
        elif self.op in ("in", "not_in"):
            if not isinstance(self.value, list) or not self.value:
                raise ValueError(f"op {self.op} needs a non-empty list value")
            object.__setattr__(self, "value", [coerce(type_, v) for v in self.value])
        else:
            object.__setattr__(self, "value", coerce(type_, self.value))
            if self.op in ("lt", "le", "gt", "ge") and type_ in ("str", "bool", "list"):
                raise ValueError(f"op {self.op} needs a numeric fact, {self.fact} is {type_}")
        return self

    def facts(self) -> list[str]:
        if self.any is not None:
            return [f for c in self.any for f in c.facts()]
        return [n for n in (self.fact, self.other) if n]


class Explanation(Strict):
    change: str = Field(description="why the setting should change; placeholders name facts")
    ok: str = Field(description="why the current setting is right (the 'passed' line)")


class NeedsLoad(Strict):
    """The load a rule's change is sized from. Without it the change is not advised: the answer is
    `undecided` (keep the current value), says why, and names the command that would decide."""

    when: list[Clause] = Field(min_length=1, description="clauses that must all hold for the load to count as seen")
    explanation: str = Field(description="why the window does not decide: what load it did not show")
    measure: list[str] = Field(min_length=1, description="argv template of the command that decides")


class WorkloadTraits(Strict):
    """The workloads a rule is for, by what their profiles say under `io:` rather than by name,
    so that a new profile gets the rules its I/O calls for. Every trait given must hold."""

    pattern: list[Literal["random", "sequential", "mixed"]] | None = None
    sync: list[Literal["none", "light", "heavy"]] | None = None
    read_fraction_at_least: float | None = Field(None, ge=0, le=1)
    read_fraction_below: float | None = Field(None, ge=0, le=1)

    @model_validator(mode="after")
    def _some_trait(self) -> WorkloadTraits:
        if not self.model_dump(exclude_none=True):
            raise ValueError("name at least one trait: pattern, sync, read_fraction_at_least, read_fraction_below")
        return self

    def matches(self, workload: Workload) -> bool:
        io = workload.io
        return (
            (self.pattern is None or io.pattern in self.pattern)
            and (self.sync is None or io.sync in self.sync)
            and (self.read_fraction_at_least is None or io.read_fraction >= self.read_fraction_at_least)
            and (self.read_fraction_below is None or io.read_fraction < self.read_fraction_below)
        )

    def describe(self) -> str:
        parts = [f"{name} {' or '.join(values)}" for name, values in (("pattern", self.pattern), ("sync", self.sync)) if values]
        if self.read_fraction_at_least is not None:
            parts.append(f"read fraction at least {self.read_fraction_at_least:g}")
        if self.read_fraction_below is not None:
            parts.append(f"read fraction below {self.read_fraction_below:g}")
        return "those with " + " and ".join(parts)


class Rule(Strict):
    id: Annotated[str, Field(pattern=SLUG)]
    title: str = Field(min_length=5, max_length=120)
    parameter: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{1,63}$")]
    scope: Scope
    kind: Literal["setting", "warning"] = "setting"
    workloads: list[str] | Literal["all"] | WorkloadTraits = Field(
        "all", description="`all`, workload names, or traits of their io profiles (WorkloadTraits)"
    )
    roles: list[str] | None = None
    when: list[Clause] = Field(default_factory=list)
    current: FactRef
    recommended: ValueExpr
    at_least: FactRef | None = Field(None, description="no value below this fact's is advised on a prediction the "
                                     "lab never measured at it (e.g. a page size other than the workload's I/O block "
                                     "size); a probe of this host still decides")
    accept: list[Any] = Field(default_factory=list, description="other values that also pass")
    compare: Compare = "equal"
    factor: float | None = Field(None, gt=1, description="for compare=within_factor")
    confidence: float = Field(ge=0, le=1)
    explanation: Explanation
    needs_load: NeedsLoad | None = Field(None, description="a change only when the host showed this load")
    sources_disagree: str | None = None
    evidence: list[str] = Field(default_factory=list)
    apply: list[str] | None = Field(None, description="argv template; None for advisories with no command")
    apply_shell: bool = Field(False, description="apply is a shell line (module parameters via sysfs), not an argv")
    apply_note: str | None = None
    effect: Effect
    reversible: str = Field(min_length=3)
    references: list[HttpUrl] = Field(min_length=1)

    @property
    def workload_specific(self) -> bool:
        return self.workloads != "all"

    @property
    def workload_independent(self) -> bool:
        """True when the rule holds for any workload: it selects all of them, no role, and reads no
        workload fact (in a condition, a value, evidence or a text). The general answer, for no
        workload in particular, is made of these."""
        if self.workloads != "all" or self.roles is not None:
            return False
        names = [*self.facts(), *(name for text in self.templates() for name, _ in template_fields(text))]
        return not any(name.startswith("workload.") for name in names)

    def selects(self, workload: Workload) -> bool:
        if self.workloads == "all":
            return True
        if isinstance(self.workloads, WorkloadTraits):
            return self.workloads.matches(workload)
        return workload.name in self.workloads

    @field_validator("references")
    @classmethod
    def _https_known(cls, refs: list[HttpUrl]) -> list[HttpUrl]:
        for ref in refs:
            if ref.scheme != "https" or ref.host not in REFERENCE_HOSTS:
                raise ValueError(f"reference {ref} must be https on one of {', '.join(REFERENCE_HOSTS)} "
                                 "(rules/tunables.yaml `references`)")
        return refs

    @field_validator("evidence")
    @classmethod
    def _evidence_known(cls, names: list[str]) -> list[str]:
        for name in names:
            _known_fact(name)
        return names

    @model_validator(mode="after")
    def _consistent(self) -> Rule:
        type_ = _known_fact(self.current.fact)
        if isinstance(self.recommended, (bool, int, float, str)):
            object.__setattr__(self, "recommended", coerce(type_, self.recommended))
        elif isinstance(self.recommended, Aggregate):
            agg = self.recommended
            items = [i if isinstance(i, FactRef) else coerce(type_, i) for i in (agg.max or agg.min or [])]
            for item in items:
                if isinstance(item, FactRef):
                    _same_kind(item.fact, self.current.fact)
            rebuilt = Aggregate(max=items) if agg.max is not None else Aggregate(min=items)
            object.__setattr__(self, "recommended", rebuilt)
        elif isinstance(self.recommended, FactRef):
            _same_kind(self.recommended.fact, self.current.fact)
        if self.at_least is not None:
            _same_kind(self.at_least.fact, self.current.fact)
        object.__setattr__(self, "accept", [coerce(type_, v) for v in self.accept])
        if self.compare == "within_factor" and self.factor is None:
            raise ValueError("compare: within_factor needs `factor`")
        if self.compare in ("at_least", "at_most", "within_factor") and type_ in ("str", "bool", "list"):
            raise ValueError(f"compare {self.compare} needs a numeric current fact, {self.current.fact} is {type_}")
        if self.scope == "module" and self.kind == "setting":
            param = self.current.fact.removeprefix("module.")
            if not self.current.fact.startswith("module.") or param != self.parameter:
                raise ValueError("a module setting's current must be module.<parameter>")
        for template in self.templates():
            check_template(template)
        return self

    def templates(self) -> list[str]:
        """Every text the rule fills with facts."""
        load = [self.needs_load.explanation, *self.needs_load.measure] if self.needs_load else []
        return [self.explanation.change, self.explanation.ok, self.sources_disagree or "", self.apply_note or "",
                *(self.apply or []), *load]

    def facts(self) -> list[str]:
        """Every fact the rule reads (for docs and evidence)."""
        load = [f for c in self.needs_load.when for f in c.facts()] if self.needs_load else []
        names = [f for c in self.when for f in c.facts()] + [self.current.fact] + load + list(self.evidence)
        rec = self.recommended
        if isinstance(rec, FactRef):
            names.append(rec.fact)
        elif isinstance(rec, Aggregate):
            names += [i.fact for i in (rec.max or rec.min or []) if isinstance(i, FactRef)]
        return list(dict.fromkeys(names))


def template_fields(template: str) -> list[tuple[str, str]]:
    """[(field, format spec)] of a template; ValueError on anything but plain names."""
    fields = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if conversion or not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)*", name):
            raise ValueError(f"template field {{{name}}} must be a plain fact name")
        if spec not in _FORMATS:
            raise ValueError(f"template field {{{name}:{spec}}}: format must be one of {_FORMATS}")
        fields.append((name, spec))
    return fields


def check_template(template: str) -> None:
    for name, _ in template_fields(template):
        if name not in TEMPLATE_EXTRAS:
            _known_fact(name)


# --- workloads -------------------------------------------------------------------


class IoProfile(Strict):
    block_size: str = Field(description="typical I/O size, e.g. 8K")
    read_fraction: float = Field(ge=0, le=1)
    pattern: Literal["random", "sequential", "mixed"]
    sync: Literal["none", "light", "heavy"]
    file_sizes: str
    description: str

    @field_validator("block_size")
    @classmethod
    def _size(cls, v: str) -> str:
        parse_size(v)
        return v


class SharedIo(Strict):
    """What a role's dataset does with the shared roles' files in it, where the fio job's sections
    side by side say less than the application does (ranges; each widens the jobs' own)."""
    why: str  # in words, with the source: a profile's claim about its application
    read_fraction: tuple[float, float] | None = None  # of operations
    write_sizes: tuple[str, str] | None = None  # the mean write request's range ("8K", "256K")
    syncs_per_write: tuple[float, float] | None = None  # fsync/fdatasync calls per write


class Role(Strict):
    name: Annotated[str, Field(pattern=SLUG)]
    description: str
    dataset_type: Literal["filesystem", "volume"] = "filesystem"
    # other roles whose files sit on this role's dataset unless someone moves them (PostgreSQL's
    # pg_wal inside the data directory): recognition also knows their mix (advisor/recognise/signature.py)
    shares_with: list[Annotated[str, Field(pattern=SLUG)]] = Field(default_factory=list)
    shared_io: SharedIo | None = None


class Parameter(Strict):
    description: str
    default: str
    values: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _default_allowed(self) -> Parameter:
        if self.default not in self.values:
            raise ValueError(f"default {self.default!r} is not one of the values {self.values}")
        return self


class Workload(Strict):
    name: Annotated[str, Field(pattern=SLUG)]
    title: str
    description: str
    io: IoProfile
    roles: list[Role] = Field(min_length=1)
    parameters: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{1,31}$")], Parameter] = Field(default_factory=dict)
    fio: dict[str, dict[str, str | int]] = Field(description="fio job file: section -> option -> value")
    references: list[HttpUrl] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Workload:
        if "role" in self.parameters:
            raise ValueError("`role` is implied by `roles`; do not declare it as a parameter")
        names = [r.name for r in self.roles]
        for role in self.roles:
            wrong = [o for o in role.shares_with if o not in names or o == role.name]
            if wrong:
                raise ValueError(f"role {role.name}: shares_with {wrong} must name the workload's other roles {names}")
        if "global" not in self.fio or len(self.fio) < 2:
            raise ValueError("fio needs a [global] section and at least one job")
        for section, options in self.fio.items():
            if not re.fullmatch(r"[a-z][a-z0-9_-]*", section):
                raise ValueError(f"fio section name {section!r} must be lowercase letters, digits, - and _")
            for key, value in options.items():
                if not re.fullmatch(r"[a-z_]+", key):
                    raise ValueError(f"fio option {key!r} in [{section}] is not an fio option name")
                for name, _ in template_fields(str(value)):
                    if name not in self.parameters:
                        raise ValueError(f"fio [{section}] {key}: unknown parameter {{{name}}}")
        return self

    @property
    def dataset_type(self) -> str:
        return self.roles[0].dataset_type

    def role(self, name: str | None) -> Role:
        return next((r for r in self.roles if r.name == name), self.roles[0])

    def job_sections(self, role: str | None) -> list[str]:
        """The fio sections that emulate `role` (ValueError for none): a section named after the
        role alone when there is one; otherwise every section not named after another role (e.g.
        postgres' `wal` section belongs on the WAL dataset, not on the data dataset being probed)."""
        roles = [r.name for r in self.roles]
        chosen = role or roles[0]
        if chosen not in roles:
            raise ValueError(f"workload {self.name} has no role {chosen!r}; valid: {roles}")
        sections = [s for s in self.fio if s != "global"]
        if chosen in sections:
            return [chosen]
        left = [s for s in sections if s not in roles]
        if not left:
            raise ValueError(f"workload {self.name}: no fio section for role {chosen!r}")
        return left

    def all_parameters(self) -> dict[str, Parameter]:
        """Declared parameters plus `role` (which of the workload's datasets)."""
        roles = Parameter(
            description="which of the workload's datasets: " + "; ".join(f"{r.name}: {r.description}" for r in self.roles),
            default=self.roles[0].name,
            values=[r.name for r in self.roles],
        )
        return {"role": roles, **self.parameters}

    def fio_job(self, params: dict[str, str]) -> str:
        values = {name: params.get(name, p.default) for name, p in self.parameters.items()}
        lines: list[str] = []
        for section, options in self.fio.items():
            lines.append(f"[{section}]")
            lines += [f"{k}={str(v).format(**values)}" for k, v in options.items()]
            lines.append("")
        return "\n".join(lines)
