"""The exporter: runs every source collector on one scrape's facts and writes the text.

`MetricsRenderer.encoded(scrape, openmetrics)` is the one render path (/metrics), and
`render_parts(scrape)` the same text as plain bytes: each collector builds fresh families from
that scrape's `Host`, is timed and guarded (a failing collector costs its own families only),
and zfs_advisor_scrape_collector_duration_seconds / _success report it like node_exporter. The
text is generate_latest()'s bytes (exposition.py), held against a prometheus_client registry by
tests/unit/test_exporter_render.py.

A scrape costs what changed: the text of a collector whose source is unchanged is kept
compressed, per format (0.0.4 text and OpenMetrics), and a scrape's body is those stored
segments followed by the rest, compressed as it is rendered (advisor/server/deflated.py), which is
sent inflated or, with its CRC-32 known, as one gzip member.
"""
from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from advisor import __version__
from advisor.exporters import fleet_status
from advisor.exporters.base import Collect, Scrape, SourceUnreadable
from advisor.exporters.exposition import has_samples, text, text_parts
from advisor.exporters.negotiation import GZIP_LEVEL, openmetrics_end, openmetrics_parts
from advisor.exporters.registry import registered
from advisor.hostmodel.facts import SCHEMA_VERSION
from advisor.process.logs import RateLimitedLog
from advisor.server.deflated import LEVEL, Deflated

log = logging.getLogger(__name__)
_unreadable_log = RateLimitedLog(log)  # a source that stays unreadable is said once a minute, not per scrape

# name -> collector, in order: each module of the package registers its own (registry.py).
REGISTERED = registered()
COLLECTORS: dict[str, Collect] = {r.name: r.collect for r in REGISTERED}
# Collectors built from zpool/zfs output alone: render() reuses their text between command runs.
COMMAND_OUTPUT_ONLY = frozenset(r.name for r in REGISTERED if r.command_output_only)
# Collectors that say cheaply what their text depends on: while it is equal, the text is too.
SOURCES: dict[str, Callable[[Scrape], Hashable]] = {r.name: r.source for r in REGISTERED if r.source is not None}


def _deflated(parts: Iterable[bytes | memoryview], level: int) -> Deflated:
    return Deflated.of_stream(parts, whole_parts=True, level=level)


def _digested(parts: Iterable[bytes], digest: hashlib.blake2b) -> Iterator[bytes]:
    """The parts, fed to `digest` as they pass (the text is never held whole)."""
    for part in parts:
        digest.update(part)
        yield part


class MetricsRenderer:
    """The /metrics text of a scrape: every collector's families, rendered and kept per collector."""

    def __init__(self, collectors: Mapping[str, Collect] = COLLECTORS):
        self.collectors = dict(collectors)
        # name -> (what its text was made from, the text deflated in segments of whole families)
        self._text_cache: dict[str, tuple[object, Deflated]] = {}
        # name -> (the same, as OpenMetrics, and the kept text a command-built one was rewritten from)
        self._openmetrics_cache: dict[str, tuple[object, Deflated, Deflated | None]] = {}
        # name -> (a command-built text kept, its digest): a run that says the same keeps it. One
        # tuple, so a render of an older output in another thread cannot pair a digest with
        # another text.
        self._digests: dict[str, tuple[Deflated, bytes]] = {}
        self.compressed: Counter[str] = Counter()  # kept texts compressed anew, per collector (tests)

    def forget(self) -> None:
        """Drop the reused text (the settings it was rendered under changed: advisor/service/reload.py)."""
        self._text_cache.clear()
        self._openmetrics_cache.clear()
        self._digests.clear()

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
            kept, parts, ok = self._parts(name, collect, scrape)
            timings[name] = (time.perf_counter() - started, ok)
            yield from kept.inflated() if kept is not None else parts
        yield text([*collector_metrics(timings), *self_metrics(scrape)])

    def encoded(self, scrape: Scrape, openmetrics: bool = False) -> Deflated:
        """render()'s bytes (as OpenMetrics if asked) deflated, with their CRC-32: the kept
        segments of unchanged collectors, the rest compressed as it is rendered."""
        timings: dict[str, tuple[float, bool]] = {}
        bodies: list[Deflated] = []
        fresh: list[bytes] = []

        def close_fresh() -> None:
            if fresh:
                bodies.append(_deflated(openmetrics_parts(fresh) if openmetrics else fresh, LEVEL))
                fresh.clear()

        for name, collect in self.collectors.items():
            started = time.perf_counter()
            kept, parts, ok = self._parts(name, collect, scrape, openmetrics)
            timings[name] = (time.perf_counter() - started, ok)
            if kept is None:
                fresh.extend(p for p in parts if p)
            else:
                close_fresh()
                bodies.append(kept)
        last = text([*collector_metrics(timings), *self_metrics(scrape)])
        fresh.append(last)
        close_fresh()
        if openmetrics:
            bodies.append(_deflated([openmetrics_end(last)], LEVEL))
        return Deflated.joined(bodies)

    def warm(self, scrape: Scrape) -> None:
        """Render the COMMAND_OUTPUT_ONLY collectors (but recommendations, which need the
        whole facts) into the reuse cache, in both formats, so the first scrape after a command
        run does not."""
        for name in COMMAND_OUTPUT_ONLY - {"recommendations"}:
            if (collect := self.collectors.get(name)) is not None:
                self._parts(name, collect, scrape, openmetrics=True)  # the text too: it is made from it

    def _source(self, name: str, scrape: Scrape) -> object | None:
        """What the collector's text is made from, when it says (None: render it every time)."""
        if name in COMMAND_OUTPUT_ONLY:
            return None if scrape.commands_generation is None else (scrape.commands_generation, scrape.options)
        source = SOURCES.get(name)
        return None if source is None else (source(scrape), scrape.options)

    def _parts(self, name: str, collect: Collect, scrape: Scrape, openmetrics: bool = False
               ) -> tuple[Deflated | None, Iterable[bytes], bool]:
        """One collector's text, as OpenMetrics if asked: (kept, (), True) when it is kept
        deflated from a scrape of the same source; else (None, its 0.0.4 parts as they are
        rendered, whether it built)."""
        source = self._source(name, scrape)
        if source is None:
            families, ok = self._build(name, collect, scrape)
            return None, text_parts(families), ok  # written as they are rendered
        cached = (self._openmetrics_cache if openmetrics else self._text_cache).get(name)
        if cached is not None and cached[0] == source:
            return cached[1], (), True
        if openmetrics and name in COMMAND_OUTPUT_ONLY:
            return self._rewritten(name, collect, scrape, source)
        families, ok = self._build(name, collect, scrape)
        if not ok:
            return None, text_parts(families), ok
        if openmetrics:  # rendered again whenever its source changes: compressed the fastest way
            kept = _deflated(openmetrics_parts(text_parts(families)), LEVEL)
            self._openmetrics_cache[name] = (source, kept, None)
            self.compressed[name] += 1
            return kept, (), True
        if name not in COMMAND_OUTPUT_ONLY:
            kept = _deflated(text_parts(families), LEVEL)
        else:  # a new command run: the same text keeps the same segments (and their OpenMetrics)
            digest = hashlib.blake2b(digest_size=16)
            kept = _deflated(_digested(text_parts(families), digest), GZIP_LEVEL)
            if (known := self._digests.get(name)) is not None and known[1] == digest.digest():
                kept = known[0]
            self._digests[name] = (kept, digest.digest())
        if cached is None or kept is not cached[1]:
            self.compressed[name] += 1
        self._text_cache[name] = (source, kept)
        return kept, (), True

    def _rewritten(self, name: str, collect: Collect, scrape: Scrape, source: object
                   ) -> tuple[Deflated | None, Iterable[bytes], bool]:
        """A command-built collector's kept text as OpenMetrics, rewritten once per text (each
        segment holds whole families, so it is rewritten alone)."""
        text, parts, ok = self._parts(name, collect, scrape)
        if text is None:
            return None, parts, ok
        known = self._openmetrics_cache.get(name)
        if known is not None and known[2] is text:
            rewritten = known[1]
        else:
            rewritten = _deflated(openmetrics_parts(text.inflated()), GZIP_LEVEL)
            self.compressed[name] += 1
        self._openmetrics_cache[name] = (source, rewritten, text)
        return rewritten, (), True


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
    if scrape.fleet is not None:
        out += fleet_status.families(scrape.fleet)
    if scrape.age_seconds is not None:
        age = GaugeMetricFamily(
            "zfs_advisor_facts_age_seconds",
            "Age of the zpool/zfs command output served: up to commands_interval_seconds plus a run's time "
            "when the background refresh keeps up.",
        )
        age.add_metric([], scrape.age_seconds)
        out.append(age)
    return [f for f in out if has_samples(f)]
