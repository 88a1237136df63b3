"""The advisor's current advice as info series: what to change, on which dataset, for which workload.

Source: the rules engine (advisor/engine) run on the latest facts for every
dataset named in the `workloads` setting (dataset -> workload). One series
per recommendation whose status is "change"; when a dataset is tuned as its
workload wants, its series disappear. `count by (dataset)
(zfs_advisor_recommendation_info)` is the number of open suggestions, and
GET /recommend explains each of them.
"""
from __future__ import annotations

from typing import Iterable

from prometheus_client.core import InfoMetricFamily, Metric

from advisor.exporters.base import CACHED, Scrape, append

LABELS = ("workload", "pool", "dataset", "scope", "parameter", "current", "recommended", "rule")


def collect(scrape: Scrape) -> Iterable[Metric]:
    info = InfoMetricFamily(
        "zfs_advisor_recommendation",
        "A recommended change for a dataset named in the workloads setting: current and recommended value as ZFS "
        "prints them (current is empty when unknown); GET /recommend?workload=W&dataset=D explains it. "
        f"Source: the rules engine (rules/*.yaml) on the latest facts.{CACHED}",
        labels=list(LABELS),
    )
    seen: set[tuple[str, ...]] = set()
    for workload, rec in scrape.recommendations:
        if rec.status != "change":
            continue
        values = (workload, rec.pool or "", rec.dataset or "", rec.scope, rec.parameter, rec.current or "",
                  rec.recommended or "", rec.rule)
        if values not in seen:  # two datasets of one workload share its pool and module advice
            seen.add(values)
            append(info, dict(zip(LABELS, values)), 1.0)
    yield info
