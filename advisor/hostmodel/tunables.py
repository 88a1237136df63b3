"""The ZFS tunables the advisor knows, read from rules/tunables.yaml: each one's OpenZFS default,
the values the advisor sets, whether a probe sets it, whether the model predicts it, and its
reference; and the hosts a reference may be on.

Data, validated here when it is loaded (at import: every table below is a view of it), so a bad
entry stops start-up with the entry named, as a bad rule does (advisor/engine/loader.py).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, HttpUrl, StrictBool, StrictStr, ValidationError, model_validator

from advisor.rules import RULES_DIR

TUNABLES_FILE = RULES_DIR / "tunables.yaml"
Scope = Literal["dataset", "module"]
_NAMES = {"dataset": re.compile(r"^[a-z][a-z0-9_]*$"), "module": re.compile(r"^zfs_[a-z0-9_]+$")}


class TunablesError(ValueError):
    """rules/tunables.yaml cannot be used; the message names the entry and why."""


class Tunable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default: StrictStr | None = None
    values: StrictStr | None = None  # a regular expression of the values the advisor sets
    probed: StrictBool = False
    predicted: StrictBool = False
    reference: HttpUrl

    @model_validator(mode="after")
    def _consistent(self) -> Tunable:
        if self.values is not None:
            try:
                pattern = re.compile(self.values)
            except re.error as exc:
                raise ValueError(f"values {self.values!r} is not a regular expression: {exc}") from None
            if self.default is not None and not pattern.fullmatch(self.default):
                raise ValueError(f"default {self.default!r} is not one of its values {self.values!r}")
        if self.probed and self.values is None:
            raise ValueError("a probed tunable needs `values` (a probe sets only what they allow)")
        if self.predicted and not self.probed:
            raise ValueError("a predicted tunable must be probed too (the model learns from probes)")
        return self

    def accepts(self, value: str) -> bool:
        return self.values is not None and re.fullmatch(self.values, value) is not None


class Tunables(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    references: dict[str, StrictStr]  # host -> what is read there
    dataset: dict[str, Tunable]
    module: dict[str, Tunable]

    @model_validator(mode="after")
    def _checked(self) -> Tunables:
        for scope in ("dataset", "module"):
            for name, tunable in getattr(self, scope).items():
                where = f"{scope}.{name}"
                if not _NAMES[scope].match(name):
                    raise ValueError(f"{where}: not a {scope} tunable's name ({_NAMES[scope].pattern})")
                if tunable.reference.scheme != "https" or tunable.reference.host not in self.references:
                    raise ValueError(f"{where}: reference {tunable.reference} must be https on one of "
                                     f"{', '.join(self.references)}")
                if scope == "dataset" and tunable.probed and tunable.default is None:
                    raise ValueError(f"{where}: a probed dataset property needs its default "
                                     "(every scratch dataset is created with it)")
        return self

    def of(self, scope: Scope) -> dict[str, Tunable]:
        return self.dataset if scope == "dataset" else self.module


def load_tunables(path: Path = TUNABLES_FILE) -> Tunables:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TunablesError(f"{path}: not readable YAML: {exc}") from None
    try:
        return Tunables.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise TunablesError(f"{path}: {problems}") from None


TUNABLES = load_tunables()

# The views the rest of the code reads, each a table of its own before this file.
# The dataset properties a Dataset carries, in the order `zfs get` asks for them.
TUNING_PROPERTIES: tuple[str, ...] = tuple(TUNABLES.dataset)
# The probed dataset properties' defaults: what a scratch dataset is created with, the model's baseline.
DATASET_DEFAULTS: dict[str, str] = {n: t.default for n, t in TUNABLES.dataset.items() if t.probed and t.default}
# The module parameters a probe may set while it runs.
PROBED_MODULE_PARAMETERS: frozenset[str] = frozenset(n for n, t in TUNABLES.module.items() if t.probed)
# Every parameter a probe may set: an answer offers a probe command for these only.
PROBED_PARAMETERS: frozenset[str] = frozenset(DATASET_DEFAULTS) | PROBED_MODULE_PARAMETERS
# The settings whose effect the model predicts.
PREDICTED_PARAMETERS: tuple[str, ...] = tuple(n for n, t in TUNABLES.dataset.items() if t.predicted)
# The hosts a rule's or a tunable's reference may be on.
REFERENCE_HOSTS: tuple[str, ...] = tuple(TUNABLES.references)


def probed(scope: Scope) -> dict[str, Tunable]:
    """The tunables of `scope` a probe may set, by name."""
    return {n: t for n, t in TUNABLES.of(scope).items() if t.probed}
