"""The advisor's current advice as info series: what to change, on which dataset, for which workload;
and which datasets of the `workloads` setting do not exist.

Source: the answer GET /recommend gives (advisor/answering/: the rules engine with the probe
store's results and the regression model) on the latest facts, for every
dataset named in the `workloads` setting (dataset -> workload). One series
per recommendation whose status is "change" (a pool or module change wanted by
several workloads once, naming them all); when a dataset is tuned as its
workload wants, its series disappear. `count(zfs_advisor_recommendation_info)`
is the number of open suggestions, and GET /recommend explains each of them.
"""
from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric

from advisor.engine.models import Recommendation
from advisor.exporters.base import CACHED, Scrape, append
from advisor.exporters.registry import collector

LABELS = ("workload", "pool", "dataset", "scope", "parameter", "current", "recommended", "rule", "confidence")
EFFECT_LABELS = ("workload", "pool", "dataset", "parameter", "metric", "source", "bound")


def _where(rec: Recommendation) -> tuple[str, str]:
    """(pool, dataset) labels: module parameters belong to the host, pool settings to the pool."""
    if rec.scope == "module":
        return "", ""
    if rec.scope in ("pool", "pool-create"):
        return rec.pool or "", ""
    return rec.pool or "", rec.dataset or ""


@collector("recommendations", after="module", command_output_only=True)
def collect(scrape: Scrape) -> Iterable[Metric]:
    info = InfoMetricFamily(
        "zfs_advisor_recommendation",
        "A recommended change for a dataset named in the workloads setting: current and recommended value as ZFS "
        "prints them (current is empty when unknown), the rule's confidence (0..1); a pool or module change wanted "
        "by several workloads is one series naming them all (workload=\"a,b\", no dataset, for a module parameter "
        "no pool either). GET /recommend?workload=W&dataset=D explains it. "
        f"Source: GET /recommend's answer (the rules engine with probe results and the regression model) on the latest facts.{CACHED}",
        labels=list(LABELS),
    )
    workloads: dict[tuple[str, ...], set[str]] = {}
    for workload, rec in scrape.recommendations:
        if rec.status == "change":
            key: tuple[str, ...] = (*_where(rec), rec.scope, rec.parameter, rec.current or "",
                                    rec.recommended or "", rec.rule, f"{rec.confidence:g}")
            workloads.setdefault(key, set()).add(workload)
    for key, names in workloads.items():
        append(info, dict(zip(LABELS, (",".join(sorted(names)), *key), strict=True)), 1.0)
    yield info
    missing = GaugeMetricFamily(
        "zfs_advisor_workload_dataset_missing",
        "1 when a dataset named in the workloads setting does not exist on this host (no advice is exported for "
        "it; the log says so once), 0 when it does. No series while the datasets are not known (zfs get failed). "
        f"Source: the workloads setting and zfs get.{CACHED}",
        labels=["dataset", "workload"],
    )
    for dataset, workload, exists in scrape.workload_datasets:
        append(missing, {"dataset": dataset, "workload": workload}, 0.0 if exists else 1.0)
    yield missing
    yield _effects(scrape)


def _effects(scrape: Scrape) -> Metric:
    """The expected effect of each open dataset recommendation that has one (a probe of the pool or
    the regression model): the change ratio and the two ends of its 90 % interval."""
    gauge = GaugeMetricFamily(
        "zfs_advisor_recommendation_expected_effect_ratio",
        "Expected effect of an open recommendation (status \"change\") for a dataset named in the workloads "
        "setting, as a multiplier of the metric (1 = no change): bound=\"expected\", and \"low\"/\"high\" the "
        "ends of its 90% interval; metric is iops or bandwidth; source is probe (measured on this pool), model "
        "or rule+model (predicted by the regression model). Only recommendations with an expected effect have "
        f"series. Source: the rules engine with probe results and the regression model.{CACHED}",
        labels=list(EFFECT_LABELS),
    )
    seen: set[tuple[str, ...]] = set()
    for workload, rec in scrape.recommendations:
        effect = rec.expected_effect
        if rec.status != "change" or effect is None or rec.scope != "dataset":
            continue
        pool, dataset = _where(rec)
        for bound, value in (("expected", effect.change_ratio), ("low", effect.interval[0]),
                             ("high", effect.interval[1])):
            labels = (workload, pool, dataset, rec.parameter, effect.metric, rec.source, bound)
            if labels not in seen:
                seen.add(labels)
                append(gauge, dict(zip(EFFECT_LABELS, labels, strict=True)), float(value))
    return gauge
