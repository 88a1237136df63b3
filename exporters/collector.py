"""The one prometheus_client collector: runs every source collector on one scrape's facts.

It is registered once in the app's own `CollectorRegistry` (no global
registry). A scrape sets `SCRAPE` (a ContextVar, so concurrent scrapes in
threads or tasks never see each other's facts) and renders the registry; each
collector then builds fresh families from that scrape's `Host`, is timed and
guarded (a failing collector costs its own families only), and reports
zfs_advisor_scrape_collector_duration_seconds / _success like node_exporter.
"""
from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from typing import Iterable, Mapping

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from advisor import __version__
from advisor.facts import SCHEMA_VERSION
from exporters import arc, datasets, disks, histograms, kstats, params, pools, txgs, vdevs
from exporters.base import Collect, Scrape
from exporters.exposition import text

log = logging.getLogger(__name__)

# name -> collector; adding a source = one module and one line here.
COLLECTORS: dict[str, Collect] = {
    "arc": arc.collect,
    "kstats": kstats.collect,
    "pools": pools.collect,
    "vdevs": vdevs.collect,
    "histograms": histograms.collect,
    "txgs": txgs.collect,
    "datasets": datasets.collect,
    "disks": disks.collect,
    "module": params.collect,
}

SCRAPE: ContextVar[Scrape | None] = ContextVar("zfs_advisor_scrape", default=None)


class FactsCollector:
    def __init__(self, collectors: Mapping[str, Collect] = COLLECTORS):
        self.collectors = dict(collectors)

    def collect(self) -> Iterable[Metric]:
        scrape = SCRAPE.get()
        if scrape is None:  # rendered outside a scrape: nothing to say
            return
        duration = GaugeMetricFamily(
            "zfs_advisor_scrape_collector_duration_seconds",
            "Time each exporter collector took to build its metrics on this scrape.",
            labels=["collector"],
        )
        success = GaugeMetricFamily(
            "zfs_advisor_scrape_collector_success",
            "1 if the collector built its metrics on this scrape, 0 if it failed (see the service log).",
            labels=["collector"],
        )
        for name, collect in self.collectors.items():
            started = time.perf_counter()
            try:
                families = [f for f in collect(scrape) if f.samples]
            except Exception:
                log.exception("exporter collector %s failed", name)
                families, ok = [], 0.0
            else:
                ok = 1.0
            duration.add_metric([name], time.perf_counter() - started)
            success.add_metric([name], ok)
            yield from families
        yield duration
        yield success
        yield from self_metrics(scrape)


def self_metrics(scrape: Scrape) -> Iterable[Metric]:
    host = scrape.host
    build = InfoMetricFamily("zfs_advisor_build", "zfs-advisor version and facts schema version.")
    build.add_metric([], {"version": __version__, "facts_schema": str(SCHEMA_VERSION)})
    stale = GaugeMetricFamily(
        "zfs_advisor_facts_stale",
        "1 if the facts collection (zpool/zfs commands, kstats) missed this scrape's deadline "
        "(metrics_scrape_deadline_seconds, or the scrape timeout Prometheus sends) and this scrape "
        "served the last good collection instead; 0 if the facts are fresh.",
    )
    stale.add_metric([], float(scrape.stale))
    collected = GaugeMetricFamily(
        "zfs_advisor_facts_collected_timestamp_seconds", "When the facts served were collected (Unix time)."
    )
    collected.add_metric([], host.collected_at.timestamp())
    collections = CounterMetricFamily(
        "zfs_advisor_facts_collections",
        "Facts collections run (one set of zpool/zfs processes each): concurrent scrapes share one, and facts "
        "younger than facts_max_age_seconds are reused.",
    )
    collections.add_metric([], scrape.collections)
    sources = GaugeMetricFamily(
        "zfs_advisor_source_up",
        "1 if the source of facts (a command, kstat or sysfs tree) could be read on the collection served.",
        labels=["source"],
    )
    for name, status in sorted(host.sources.items()):
        sources.add_metric([name], float(status.ok))
    source_time = GaugeMetricFamily(
        "zfs_advisor_source_duration_seconds",
        "Time each source of facts took on the collection served (commands: their run time).",
        labels=["source"],
    )
    for name, seconds in sorted(scrape.source_durations.items()):
        source_time.add_metric([name], seconds)
    out: list[Metric] = [build, stale, collected, collections, sources, source_time]
    if scrape.age_seconds is not None:
        age = GaugeMetricFamily(
            "zfs_advisor_facts_age_seconds",
            "Age of the facts served: up to facts_max_age_seconds when reused, more when stale.",
        )
        age.add_metric([], scrape.age_seconds)
        out.append(age)
    return [f for f in out if f.samples]


def create_registry(collector: FactsCollector | None = None) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector or FactsCollector())
    return registry


def render(registry: CollectorRegistry, scrape: Scrape) -> bytes:
    """The text exposition (format 0.0.4) of `registry` for one scrape: generate_latest()'s bytes."""
    token = SCRAPE.set(scrape)
    try:
        return text(registry.collect())
    finally:
        SCRAPE.reset(token)
