"""The exporter's output by prometheus_client's own means: every collector of one scrape in a
`CollectorRegistry`, written by `generate_latest()`.  The reference MetricsRenderer.render() (the
service's one render path, with its reused text and its fast writer) is held against
(tests/unit/test_exporter_render.py); collector durations are 0 here, so compare without them."""
from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric

from advisor.exporters.base import Collect, Scrape
from advisor.exporters.collector import COLLECTORS, collector_metrics, self_metrics
from advisor.exporters.exposition import has_samples


class ReferenceCollector:
    """One scrape's families, each collector guarded as the service guards it."""

    def __init__(self, scrape: Scrape, collectors: Mapping[str, Collect] = COLLECTORS):
        self.scrape, self.collectors = scrape, collectors

    def collect(self) -> Iterator[Metric]:
        timings: dict[str, tuple[float, bool]] = {}
        for name, collect in self.collectors.items():
            try:
                families, ok = [f for f in collect(self.scrape) if has_samples(f)], True
            except Exception:
                families, ok = [], False
            timings[name] = (0.0, ok)
            yield from families
        yield from collector_metrics(timings)
        yield from self_metrics(self.scrape)


def reference_registry(scrape: Scrape, collectors: Mapping[str, Collect] = COLLECTORS) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ReferenceCollector(scrape, collectors))
    return registry


def reference_text(scrape: Scrape, collectors: Mapping[str, Collect] = COLLECTORS) -> bytes:
    return generate_latest(reference_registry(scrape, collectors))
