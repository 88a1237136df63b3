"""The exporter's whole-run families (advisor/exporters/probe_repeats.py) as Prometheus returns
them, checked: a sample that is not a finite number in its range, or lacks a label it needs, is
refused and counted by reason, never read as a measurement.  Pure over the decoded JSON."""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from advisor.hostmodel.pool_labels import SIBLING_LABELS

MAX_REPEATS = 5  # advisor/store/probe_stats.py MAX_EXPORTED_REPEATS
# The largest value believed of each family: beyond it a series is junk, not a fast pool.
FAMILIES = {
    "iops": ("zfs_advisor_probe_repeat_iops", 1e8),
    "bandwidth": ("zfs_advisor_probe_repeat_bandwidth_bytes_per_second", 1e12),
    "write_p99": ("zfs_advisor_probe_repeat_write_latency_p99_seconds", 3600.0),
    "working_set": ("zfs_advisor_probe_run_working_set_bytes", float(1 << 50)),
    "arc_max": ("zfs_advisor_probe_run_arc_max_bytes", float(1 << 50)),
}
POOL_INFO = "zfs_advisor_probe_pool_info"
RUN_KEYS = ("instance", "pool", "workload", "parameter")
PARAMETERS = {"recordsize": re.compile(r"^(512|[1-9][0-9]{0,4}[KM])$"), "compression": re.compile(r"^[a-z0-9-]{1,16}$")}
NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")  # a label value: printable, bounded


@dataclass
class Refused:
    """Series refused on reading, by reason (not_finite, out_of_range, labels)."""
    counts: Counter = field(default_factory=Counter)

    def add(self, reason: str) -> None:
        self.counts[reason] += 1


@dataclass(frozen=True)
class SiblingRepeat:
    value: str
    repeat: int
    iops: float
    bandwidth: float | None
    write_p99: float | None


@dataclass
class SiblingRun:
    instance: str
    pool: str
    workload: str
    parameter: str
    labels: dict[str, str]  # the pool's SIBLING_LABELS
    working_set_bytes: int | None = None
    arc_max_bytes: int | None = None
    repeats: list[SiblingRepeat] = field(default_factory=list)


def _number(sample: dict[str, Any], limit: float, refused: Refused) -> float | None:
    try:
        value = float(sample["value"][1])
    except (KeyError, IndexError, TypeError, ValueError):
        refused.add("labels")
        return None
    if not math.isfinite(value):
        refused.add("not_finite")
        return None
    if not 0 <= value <= limit:
        refused.add("out_of_range")
        return None
    return value


def _labels(sample: dict[str, Any], keys: tuple[str, ...], refused: Refused) -> dict[str, str] | None:
    metric = sample.get("metric") if isinstance(sample, dict) else None
    if not isinstance(metric, dict) or not all(isinstance(metric.get(k), str) and NAME.match(metric[k]) for k in keys):
        refused.add("labels")
        return None
    return {k: metric[k] for k in keys}


def pool_infos(result: list[Any], refused: Refused) -> dict[tuple[str, str], dict[str, str]]:
    """(instance, pool) -> its SIBLING_LABELS, from the info series."""
    out = {}
    for sample in result:
        labels = _labels(sample, ("instance", "pool", *SIBLING_LABELS), refused)
        if labels is not None and _number(sample, 1.0, refused) == 1.0:
            out[(labels["instance"], labels["pool"])] = {k: labels[k] for k in SIBLING_LABELS}
    return out


def _repeat_samples(samples: list[Any], limit: float, refused: Refused) -> Iterator[tuple[dict[str, str], float]]:
    """(labels, value) of a per-repeat family's samples whose labels and number pass; the others refused."""
    for sample in samples:
        labels = _labels(sample, (*RUN_KEYS, "value", "repeat"), refused)
        value = _number(sample, limit, refused) if labels is not None else None
        if labels is None or value is None:
            continue
        if not labels["repeat"].isdigit() or not 1 <= int(labels["repeat"]) <= MAX_REPEATS \
                or not PARAMETERS.get(labels["parameter"], NAME).match(labels["value"]):
            refused.add("labels")
            continue
        yield labels, value


def runs(results: dict[str, list[Any]], infos: dict[tuple[str, str], dict[str, str]],
         refused: Refused) -> list[SiblingRun]:
    """The runs of pools with an info series, from each family's query result (FAMILIES' keys)."""
    by: dict[tuple, SiblingRun] = {}

    def run_of(labels: dict[str, str]) -> SiblingRun | None:
        pattern = PARAMETERS.get(labels["parameter"])
        info = infos.get((labels["instance"], labels["pool"]))
        if pattern is None or info is None:
            refused.add("labels")
            return None
        key = tuple(labels[k] for k in RUN_KEYS)
        if key not in by:
            by[key] = SiblingRun(labels["instance"], labels["pool"], labels["workload"], labels["parameter"], labels=info)
        return by[key]

    repeats: dict[tuple, dict[str, float]] = {}
    for name in ("iops", "bandwidth", "write_p99"):
        for labels, value in _repeat_samples(results.get(name, []), FAMILIES[name][1], refused):
            if run_of(labels) is not None:
                repeats.setdefault((*(labels[k] for k in RUN_KEYS), labels["value"], int(labels["repeat"])), {})[name] = value
    for (*key, value, repeat), numbers in sorted(repeats.items()):
        if "iops" in numbers and numbers["iops"] > 0:
            by[tuple(key)].repeats.append(SiblingRepeat(value, repeat, numbers["iops"], numbers.get("bandwidth"),
                                                        numbers.get("write_p99")))
    for name, attribute in (("working_set", "working_set_bytes"), ("arc_max", "arc_max_bytes")):
        for sample in results.get(name, []):
            run_labels = _labels(sample, RUN_KEYS, refused)
            number = _number(sample, FAMILIES[name][1], refused) if run_labels is not None else None
            run = by.get(tuple(run_labels[k] for k in RUN_KEYS)) if run_labels is not None else None
            if run is not None and number:
                setattr(run, attribute, int(number))
    return [r for r in by.values() if r.repeats]
