"""The advisor's current advice as info series: what to change, on which dataset, for which workload.

Source: the rules engine (advisor/engine) run on the latest facts for every
dataset named in the `workloads` setting (dataset -> workload). One series
per recommendation whose status is "change" (a pool or module change wanted by
several workloads once, naming them all); when a dataset is tuned as its
workload wants, its series disappear. `count(zfs_advisor_recommendation_info)`
is the number of open suggestions, and GET /recommend explains each of them.
"""
from __future__ import annotations

from typing import Iterable

from prometheus_client.core import InfoMetricFamily, Metric

from advisor.engine.models import Recommendation
from advisor.exporters.base import CACHED, Scrape, append

LABELS = ("workload", "pool", "dataset", "scope", "parameter", "current", "recommended", "rule", "confidence")


def _where(rec: Recommendation) -> tuple[str, str]:
    """(pool, dataset) labels: module parameters belong to the host, pool settings to the pool."""
    if rec.scope == "module":
        return "", ""
    if rec.scope in ("pool", "pool-create"):
        return rec.pool or "", ""
    return rec.pool or "", rec.dataset or ""


def collect(scrape: Scrape) -> Iterable[Metric]:
    info = InfoMetricFamily(
        "zfs_advisor_recommendation",
        "A recommended change for a dataset named in the workloads setting: current and recommended value as ZFS "
        "prints them (current is empty when unknown), the rule's confidence (0..1); a pool or module change wanted "
        "by several workloads is one series naming them all (workload=\"a,b\", no dataset, for a module parameter "
        "no pool either). GET /recommend?workload=W&dataset=D explains it. "
        f"Source: the rules engine (rules/*.yaml) on the latest facts.{CACHED}",
        labels=list(LABELS),
    )
    workloads: dict[tuple[str, ...], set[str]] = {}
    for workload, rec in scrape.recommendations:
        if rec.status == "change":
            key = (*_where(rec), rec.scope, rec.parameter, rec.current or "", rec.recommended or "", rec.rule,
                   f"{rec.confidence:g}")
            workloads.setdefault(key, set()).add(workload)
    for key, names in workloads.items():
        append(info, dict(zip(LABELS, (",".join(sorted(names)), *key))), 1.0)
    yield info
