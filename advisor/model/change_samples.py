"""Verified setting changes as the model's local samples: what a change did on this pool, learnt.

A change someone applied to a dataset (`zfs set recordsize=16K tank/db`) is measured by the
change tracker over matched windows before and after (advisor/changes, docs/changes.md). When the
dataset's workload is named (the `workloads` setting, or the recommendation the change followed)
and one side of the change is the ZFS default, the change is a two-point run of this pool for that
workload: the default at the mean of its window, the other value at the mean of its own. The model
reads it like a probe run (its effects are ratios to the default within one run), so the next
prediction for the workload on this pool is conditioned on what the change did.

Left out: a change between two values neither of which is the default (the model's effects are
against the default), a window with too little load to tell (`not enough load`), and a change made
together with another setting of the same dataset (the effect is theirs together).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from advisor.engine.measured import same_value
from advisor.engine.units import format_size, parse_size
from advisor.hostmodel.tunables import DATASET_DEFAULTS, PREDICTED_PARAMETERS
from advisor.model.features import Observation, supported

TOO_LITTLE = "not enough load"


def workload_of(record: dict[str, Any]) -> str | None:
    """The dataset's workload when the change was seen: the setting's, else the followed advice's."""
    followed = record.get("followed_recommendation") or {}
    named = record.get("workload") or followed.get("workload")
    return None if named in (None, "general") else named


def change_observations(records: Iterable[dict[str, Any]], workload: str, base: Observation) -> list[Observation]:
    """Two observations per usable change of `workload`'s datasets (`base`: the pool's default
    candidate for the workload, as the model queries it), each pair a run of its own."""
    out: list[Observation] = []
    for r in records:
        if workload_of(r) != workload or r.get("parameter") not in PREDICTED_PARAMETERS or r.get("status") != "done":
            continue
        if any("changed within the same collection interval" in n for n in r.get("notes") or []):
            continue
        pair = _measured_pair(r, base.metric)
        if pair is None:
            continue
        parameter, default = r["parameter"], DATASET_DEFAULTS[r["parameter"]]
        before, after = pair
        if same_value(r["old"], default) and not same_value(r["new"], default):
            sides = ((default, before), (_label(parameter, r["new"]), after))
        elif same_value(r["new"], default) and not same_value(r["old"], default):
            sides = ((default, after), (_label(parameter, r["old"]), before))
        else:
            continue
        run = f"change:{r.get('id')}"
        observed = [replace(base.with_candidate(parameter, value), run=run, perf=perf) for value, perf in sides]
        if all(supported(o) for o in observed):
            out += observed
    return out


def _measured_pair(record: dict[str, Any], metric: str) -> tuple[float, float] | None:
    """(mean before, mean after) of the dataset's own `metric` (iops or bandwidth), when both
    windows had enough load."""
    for e in record.get("effects") or []:
        if e.get("metric") == metric and e.get("of") == "dataset" and e.get("dataset") == record.get("dataset"):
            before, after = (e.get("before") or {}).get("mean"), (e.get("after") or {}).get("mean")
            if e.get("verdict") == TOO_LITTLE or not before or not after or before <= 0 or after <= 0:
                return None
            return float(before), float(after)
    return None


def _label(parameter: str, value: str) -> str:
    """The value as the model's candidates name it: a recordsize of 8192 is 8K."""
    if parameter == "recordsize":
        try:
            return format_size(parse_size(value))
        except ValueError:
            return value
    return value.strip().lower()
