"""The exporter: runs every source collector on one scrape's facts and writes the text.

`FactsCollector.render_parts(scrape)` is the one render path (/metrics): each collector builds
fresh families from that scrape's `Host`, is timed and guarded (a failing collector costs its
own families only), and zfs_advisor_scrape_collector_duration_seconds / _success report it like
node_exporter. The text is generate_latest()'s bytes (exposition.py), held against a
prometheus_client registry by tests/unit/test_exporter_render.py.
"""
from __future__ import annotations

import logging
import time
from typing import Iterable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from advisor import __version__
from advisor.deflated import Deflated
from advisor.facts import SCHEMA_VERSION
from advisor.logs import RateLimitedLog
from advisor.exporters import (arc, changes, datasets, disks, efficiency, histograms, kstats, params, pools, probes,
                               recommendations, tx_assign, txgs, vdevs, workloads)
from advisor.exporters.base import Collect, Scrape, SourceUnreadable
from advisor.exporters.exposition import has_samples, text, text_parts

log = logging.getLogger(__name__)
_unreadable_log = RateLimitedLog(log)  # a source that stays unreadable is said once a minute, not per scrape

# name -> collector; adding a source = one module and one line here.
COLLECTORS: dict[str, Collect] = {
    "arc": arc.collect,
    "kstats": kstats.collect,
    "pools": pools.collect,
    "vdevs": vdevs.collect,
    "histograms": histograms.collect,
    "txgs": txgs.collect,
    "tx_assign": tx_assign.collect,
    "datasets": datasets.collect,
    "dataset_io": datasets.collect_io,
    "disks": disks.collect,
    "module": params.collect,
    "recommendations": recommendations.collect,
    "probes": probes.collect,
    "efficiency": efficiency.collect,
    "changes": changes.collect,
    "workloads": workloads.collect,
}


# Collectors built from zpool/zfs output alone (and module parameters, read with
# it, and the advice computed from it once per command run): their text changes only when the commands run again
# (every commands_interval_seconds), so render() reuses it between runs. At
# 10,000 datasets that is most of a scrape's series.
COMMAND_OUTPUT_ONLY = frozenset({"vdevs", "histograms", "datasets", "module", "recommendations"})


class FactsCollector:
    def __init__(self, collectors: Mapping[str, Collect] = COLLECTORS):
        self.collectors = dict(collectors)
        self._text_cache: dict[str, tuple[tuple, Deflated]] = {}

    def forget(self) -> None:
        """Drop the reused text (the settings it was rendered under changed: advisor/reload.py)."""
        self._text_cache.clear()

    def _build(self, name: str, collect: Collect, scrape: Scrape) -> tuple[list[Metric], bool]:
        try:
            return [f for f in collect(scrape) if has_samples(f)], True
        except SourceUnreadable as exc:
            _unreadable_log.log(logging.WARNING, name, "exporter collector %s: %s", name, exc)
            return [], False
        except Exception:
            log.exception("exporter collector %s failed", name)
            return [], False

    def render(self, scrape: Scrape) -> bytes:
        """The text exposition (format 0.0.4) of one scrape, generate_latest()'s bytes, with the text
        of COMMAND_OUTPUT_ONLY collectors reused while the command output is the same."""
        return b"".join(self.render_parts(scrape))

    def render_parts(self, scrape: Scrape) -> Iterator[bytes]:
        """render()'s bytes in parts of whole families, to be compressed as they come: at 10,000
        datasets the joined text is 16 MB, and its lines as strings were 20 MB more."""
        timings: dict[str, tuple[float, bool]] = {}
        for name, collect in self.collectors.items():
            started = time.perf_counter()
            parts, ok = self._parts(name, collect, scrape)
            timings[name] = (time.perf_counter() - started, ok)
            yield from parts
        yield text([*collector_metrics(timings), *self_metrics(scrape)])

    def warm(self, scrape: Scrape) -> None:
        """Render the COMMAND_OUTPUT_ONLY collectors (but recommendations, which need the
        whole facts) into the reuse cache, so the first scrape after a command run does not."""
        for name in COMMAND_OUTPUT_ONLY - {"recommendations"}:
            if (collect := self.collectors.get(name)) is not None:
                self._parts(name, collect, scrape)

    def _parts(self, name: str, collect: Collect, scrape: Scrape) -> tuple[Iterable[bytes], bool]:
        """One collector's text in parts: reused when it is built from command output that has
        not changed, kept deflated in between (the dataset families are about 10 MB of text at
        10,000 datasets, a tenth of that deflated; each part is inflated as it is written)."""
        reusable = name in COMMAND_OUTPUT_ONLY and scrape.commands_generation is not None
        key = (scrape.commands_generation, scrape.options)
        if reusable and (cached := self._text_cache.get(name)) is not None and cached[0] == key:
            return cached[1].inflated(), True
        families, ok = self._build(name, collect, scrape)
        if not (ok and reusable):
            return text_parts(families), ok  # written as they are rendered
        kept = self._text_cache[name] = (key, Deflated.of_stream(text_parts(families), whole_parts=True))
        return kept[1].inflated(), ok


def collector_metrics(timings: Mapping[str, tuple[float, bool]]) -> list[Metric]:
    duration = GaugeMetricFamily(
        "zfs_advisor_scrape_collector_duration_seconds",
        "Time each exporter collector took to build its metrics on this scrape (near 0 for vdevs, histograms "
        "and datasets when the zpool/zfs output has not changed since the last scrape and their text is reused).",
        labels=["collector"],
    )
    success = GaugeMetricFamily(
        "zfs_advisor_scrape_collector_success",
        "1 if the collector built its metrics on this scrape, 0 if it failed (see the service log).",
        labels=["collector"],
    )
    for name, (seconds, ok) in timings.items():
        duration.add_metric([name], seconds)
        success.add_metric([name], float(ok))
    return [duration, success]


def self_metrics(scrape: Scrape) -> Iterable[Metric]:
    host = scrape.host
    build = InfoMetricFamily("zfs_advisor_build", "zfs-advisor version and facts schema version.")
    build.add_metric([], {"version": __version__, "facts_schema": str(SCHEMA_VERSION)})
    stale = GaugeMetricFamily(
        "zfs_advisor_facts_stale",
        "1 if the zpool/zfs command output served is overdue: older than commands_interval_seconds plus "
        "command_timeout_seconds (the background refresh fails or hangs), or not there yet; 0 if it is current.",
    )
    stale.add_metric([], float(scrape.stale))
    collected = GaugeMetricFamily(
        "zfs_advisor_facts_collected_timestamp_seconds", "When the facts served were collected (Unix time)."
    )
    collected.add_metric([], host.collected_at.timestamp())
    collections = CounterMetricFamily(
        "zfs_advisor_facts_collections",
        "Facts collections served (kstats and sysfs read, with the latest zpool/zfs output): concurrent "
        "scrapes share one, and one younger than facts_max_age_seconds is reused.",
    )
    collections.add_metric([], scrape.collections)
    command_runs = CounterMetricFamily(
        "zfs_advisor_command_runs",
        "Runs of the zpool/zfs commands (one set of processes each), in the background every "
        "commands_interval_seconds, or on demand when none is recent.",
    )
    command_runs.add_metric([], scrape.command_runs)
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
    out: list[Metric] = [build, stale, collected, collections, command_runs, sources, source_time]
    if scrape.probes is not None:  # as the probe families: nothing when no probe ever ran
        skipped = CounterMetricFamily(
            "zfs_advisor_store_rows_skipped",
            "Rows of the probe store skipped on reading since the service started, by table: a row that does not "
            "parse (a value of the wrong type, a number no measurement has, bad JSON, an unknown status) is left "
            "out of every answer that reads it, and counted each time it is read (see the service log).",
            labels=["table"])
        for table, count in scrape.store_rows_skipped:
            skipped.add_metric([table], count)
        out.append(skipped)
    if scrape.age_seconds is not None:
        age = GaugeMetricFamily(
            "zfs_advisor_facts_age_seconds",
            "Age of the zpool/zfs command output served: up to commands_interval_seconds plus a run's time "
            "when the background refresh keeps up.",
        )
        age.add_metric([], scrape.age_seconds)
        out.append(age)
    return [f for f in out if has_samples(f)]
