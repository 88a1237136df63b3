"""Prometheus naming conventions for metric families (tests/golden/test_metric_names.py says why
each rule): the rules, and the families of an exposition text."""
from __future__ import annotations

import re

_UNITS = "bytes|seconds|ratio|celsius|volts|amperes|joules|grams|meters"
RULES = (
    ("an index inside the name (make it a label)", re.compile(r"_\d+(_|$)"), None),
    ("_count before _total (a counter of things is <things>_total)", re.compile(r"_count_total$"), None),
    ("a suffix Prometheus reserves for histograms and summaries", re.compile(r"_(count|sum|bucket)$"), None),
    ("a unit that is not last", re.compile(rf"_({_UNITS})_(?!total$)"), None),
    ("a rate gauge (export the counter: rate() is PromQL's)", re.compile(r"_per_second$"), None),
    ("_total on a gauge", re.compile(r"_total$"), "gauge"),
    ("a counter without _total", re.compile(r"(?<!_total)$"), "counter"),
)


def violations(families: dict[str, str]) -> list[str]:
    """'name (type): rule' for each family that breaks a rule."""
    out = []
    for name, kind in sorted(families.items()):
        for why, pattern, only in RULES:
            if (only is None or kind == only) and pattern.search(name):
                out.append(f"{name} ({kind}): {why}")
    return out


def families_in(text: str) -> dict[str, str]:
    """Family -> type, from the TYPE lines (a counter's family is written with `_total` in OpenMetrics
    and without it in the 0.0.4 text prometheus_client writes; the sample name carries it either way)."""
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    return {(f"{name}_total" if kind == "counter" and not name.endswith("_total") else name): kind
            for name, kind in types.items()}
