"""What a probe compares: candidate settings (a dataset property or a module parameter) and the plan.

A candidate changes ONE thing against the baseline (ZFS defaults inherited from the pool's
root dataset), so each result says what that one setting did.  The baseline value of each
parameter is always part of the plan: effects are ratios against it.
"""
from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.engine.units import format_size, parse_size
from advisor.hostmodel.tunables import DATASET_DEFAULTS, probed

# What a candidate may set (rules/tunables.yaml, `probed: true`): a dataset property on its scratch
# child, or a module parameter while the probe runs.
DATASET_PROPERTIES = probed("dataset")
MODULE_PARAMETERS = probed("module")
# Every parameter a candidate may set, as error messages and the API list them.
PROBED = sorted(DATASET_PROPERTIES) + sorted(MODULE_PARAMETERS)


class Candidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    parameter: str
    value: str
    scope: Literal["dataset", "module"]
    baseline: bool = Field(False, description="true for the value the others are compared with")

    @property
    def key(self) -> str:
        """A short name for the candidate, also the scratch child's name (safe for ZFS names)."""
        return f"{self.parameter}-{self.value}".replace("=", "-")

    def dataset_properties(self) -> dict[str, str]:
        # the OpenZFS defaults, written explicitly so a pool whose root dataset was tuned does not
        # leak into the baseline
        props = dict(DATASET_DEFAULTS)
        if self.scope == "dataset":
            props[self.parameter] = self.value
        return props

    def module_parameters(self) -> dict[str, str]:
        return {self.parameter: self.value} if self.scope == "module" else {}


class CandidateError(ValueError):
    """A candidate this runner will not apply; the message says why."""


def make_candidate(parameter: str, value: str, baseline: bool = False) -> Candidate:
    if parameter in DATASET_PROPERTIES:
        if not DATASET_PROPERTIES[parameter].accepts(value):
            raise CandidateError(f"{parameter}={value!r} is not a value this runner sets")
        if parameter == "recordsize":
            size = parse_size(value)
            if size < 512 or size > 16 << 20 or size & (size - 1):
                raise CandidateError(f"recordsize={value!r} must be a power of two from 512 to 16M")
        return Candidate(parameter=parameter, value=value, scope="dataset", baseline=baseline)
    if parameter in MODULE_PARAMETERS:
        if not MODULE_PARAMETERS[parameter].accepts(value):
            raise CandidateError(f"{parameter}={value!r}: module parameters here are non-negative integers")
        return Candidate(parameter=parameter, value=value, scope="module", baseline=baseline)
    raise CandidateError(
        f"{parameter!r} is not probed; valid: {PROBED}")


def parse_candidate_spec(spec: str) -> list[Candidate]:
    """'recordsize=8K,16K,128K' -> candidates; the first value listed is the baseline unless the
    ZFS default is among them."""
    parameter, sep, values = spec.partition("=")
    if not sep or not values:
        raise CandidateError(f"{spec!r}: expected PARAMETER=VALUE[,VALUE...]")
    items = [v.strip() for v in values.split(",") if v.strip()]
    base = DATASET_DEFAULTS.get(parameter.strip())
    baseline_value = base if base in items else items[0]
    return [make_candidate(parameter.strip(), v, baseline=(v == baseline_value)) for v in dict.fromkeys(items)]


def _io_size(block_size: str) -> int:
    """The workload's I/O size in bytes (8K when it cannot be read)."""
    try:
        return parse_size(block_size)
    except ValueError:
        return 8192


def recordsize_grid(block_size: str) -> list[str]:
    """Six consecutive powers of two from 4K to 1M: up to 8 times the workload's I/O size and at
    least up to the 128K default (4K-128K for pages of 4K-16K, 32K-1M for 128K I/O).  The lab
    prior measured the same grid for each of its workloads (docs/prior.md), so the model predicts
    every value it is asked about from measurements of that value."""
    top = min(1 << 20, max(128 << 10, _io_size(block_size) * 8))
    top = 1 << (top.bit_length() - 1)  # a power of two
    return [format_size(top >> shift) for shift in range(5, -1, -1) if top >> shift >= 4096]


def nearest_first(values: list[str], block_size: str) -> list[str]:
    """`values` (sizes) nearest the I/O size first, in doublings, the larger first between two
    as near: a plan whose budget cannot take the whole grid drops the values farthest from it."""
    size = _io_size(block_size)
    return sorted(values, key=lambda v: (abs(math.log2(parse_size(v) / size)), -parse_size(v)))
