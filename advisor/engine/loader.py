"""Load and validate rules/*.yaml and rules/workloads/*.yaml into a `RuleBook`.

Anything wrong — YAML syntax, a schema violation, a duplicate id, a rule naming
a workload that does not exist — raises `RulesError` naming the file and the
rule, so a broken rule stops start-up instead of silently vanishing.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from advisor.engine import derived_catalogue  # noqa: F401  (rules are validated against the whole catalogue)
from advisor.engine.models import GENERAL
from advisor.engine.schema import Rule, Workload
from advisor.evidence.app_findings import AppFinding, read_findings
from advisor.evidence.lab_grid import LabMeasurement, read_module_grid
from advisor.hostmodel.tunables import TUNABLES_FILE
from advisor.rules import RULES_DIR

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1 << 20
# the lab's module-parameter grid (tests/lab/prior-grid --module-param), shipped as package data
MODULE_GRID = Path(__file__).resolve().parents[1] / "model" / "data" / "module-grid-zfs2.3.csv"
APP_FINDINGS = Path(__file__).resolve().parents[1] / "model" / "data" / "app-findings.json"
# libyaml's safe loader when PyYAML was built with it (about 10x faster); both build plain data only.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class RulesError(Exception):
    """The rule files cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class RuleBook:
    rules: tuple[Rule, ...]
    workloads: dict[str, Workload]
    directory: Path
    # (media, workload, module parameter) -> what the lab measured of it (advisor/evidence/lab_grid.py)
    lab_modules: dict[tuple[str, str, str], LabMeasurement] = field(default_factory=dict)
    # (medium, workload, parameter) -> what a real application showed of the prior's evidence there
    app_findings: dict[tuple[str, str, str], AppFinding] = field(default_factory=dict)

    def rule(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def rules_for(self, workload: Workload) -> list[Rule]:
        return [r for r in self.rules if r.selects(workload)]


def _read_yaml(path: Path) -> object:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise RulesError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise RulesError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise RulesError(f"{path}: not valid YAML: nested too deeply") from None


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())


def load_workloads(directory: Path) -> dict[str, Workload]:
    workloads: dict[str, Workload] = {}
    for path in sorted((directory / "workloads").glob("*.yaml")):
        data = _read_yaml(path)
        try:
            workload = Workload.model_validate(data)
        except ValidationError as exc:
            raise RulesError(f"{path}: invalid workload: {_problems(exc)}") from None
        if workload.name == GENERAL:
            raise RulesError(f"{path}: `{GENERAL}` is reserved: it names the answer for no workload in particular")
        if workload.name != path.stem:
            raise RulesError(f"{path}: workload name {workload.name!r} must match the file name {path.stem!r}")
        workloads[workload.name] = workload
    if not workloads:
        raise RulesError(f"{directory / 'workloads'}: no workload profiles (*.yaml)")
    return workloads


def load_rules(directory: Path, workloads: dict[str, Workload]) -> list[Rule]:
    rules: list[Rule] = []
    seen: dict[str, Path] = {}
    for path in sorted(directory.glob("*.yaml")):
        if path.name == TUNABLES_FILE.name:  # the tunables, not rules (advisor/hostmodel/tunables.py)
            continue
        data = _read_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
            raise RulesError(f"{path}: expected a mapping with a `rules:` list")
        if set(data) - {"rules", "about"}:
            raise RulesError(f"{path}: unknown top-level keys {sorted(set(data) - {'rules', 'about'})}")
        for i, item in enumerate(data["rules"]):
            rule_id = item.get("id", f"#{i}") if isinstance(item, dict) else f"#{i}"
            try:
                rule = Rule.model_validate(item)
            except ValidationError as exc:
                raise RulesError(f"{path}: rule {rule_id}: {_problems(exc)}") from None
            if rule.id in seen:
                raise RulesError(f"{path}: rule {rule.id}: id already used in {seen[rule.id]}")
            seen[rule.id] = path
            _check_selection(rule, workloads, path)
            rules.append(rule)
    if not rules:
        raise RulesError(f"{directory}: no rules (*.yaml)")
    return rules


def _check_selection(rule: Rule, workloads: dict[str, Workload], path: Path) -> None:
    """The workloads and roles a rule names exist (RulesError names the unknown ones and the known)."""
    if isinstance(rule.workloads, list):
        unknown = sorted(set(rule.workloads) - set(workloads))
        if unknown:
            raise RulesError(f"{path}: rule {rule.id}: unknown workloads {unknown}; known: {sorted(workloads)}")
    if rule.roles is not None:
        known_roles = {r.name for w in workloads.values() if rule.selects(w) for r in w.roles}
        unknown = sorted(set(rule.roles) - known_roles)
        if unknown:
            raise RulesError(f"{path}: rule {rule.id}: unknown roles {unknown}; known: {sorted(known_roles)}")


def load_rulebook(directory: str | os.PathLike[str] | None = None) -> RuleBook:
    base = Path(directory) if directory else RULES_DIR
    if not base.is_dir():
        raise RulesError(f"rules directory {base} does not exist")
    workloads = load_workloads(base)
    book = RuleBook(tuple(load_rules(base, workloads)), workloads, base, load_lab_modules(), load_app_findings())
    for name in unmatched_workloads(book):
        log.warning("workload %s matches no workload-specific rule: it gets only the rules for all workloads "
                    "(select it by name or by its io traits in a rule's `workloads:`)", name)
    return book


def load_lab_modules(path: Path = MODULE_GRID) -> dict[tuple[str, str, str], LabMeasurement]:
    """The lab's module-parameter grid shipped with the program; none when it is absent."""
    if not path.is_file():
        return {}
    try:
        return read_module_grid(path.read_text(encoding="utf-8"))
    except (KeyError, TypeError, ValueError) as exc:  # a damaged file (a column gone, a row cut): the rules work without it
        log.warning("the lab's module-parameter grid %s is not readable, not used: %s", path, exc)
        return {}


def load_app_findings(path: Path = APP_FINDINGS) -> dict[tuple[str, str, str], AppFinding]:
    """The application lab's findings shipped with the program; none when the file is absent."""
    if not path.is_file():
        return {}
    try:
        return read_findings(path.read_text(encoding="utf-8"))
    except (KeyError, TypeError, ValueError, IndexError) as exc:  # damaged: answers go without it, as before it
        log.warning("the application lab's findings %s are not readable, not used: %s", path, exc)
        return {}


def unmatched_workloads(book: RuleBook) -> list[str]:
    """Workloads that no rule selects by name or by trait (only the `all` rules apply to them)."""
    specific = [r for r in book.rules if r.workload_specific]
    return [name for name, w in sorted(book.workloads.items()) if not any(r.selects(w) for r in specific)]
