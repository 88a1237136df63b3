"""Every family name follows the Prometheus naming conventions, on every recorded host.

https://prometheus.io/docs/practices/naming/ and client_python's rules: an index is a label,
never part of the name (`zfs_abd_scatter_chunks{order="3"}`, not `zfs_abd_scatter_order_3`);
the base unit comes last (`_bytes`, `_seconds`, then `_total` on a counter); `_total` only on
counters and never after `_count`, which histograms and summaries own; rates are PromQL's to
compute (`rate()` of a counter), not a gauge averaged since the pool was imported.

The names are read from the golden files, which test_metrics_golden.py proves equal to what
the service serves for each recording (the `.detail` variant has every option on, diskstats
included), and from a scrape of the synthetic host with every option on.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from advisor.exporters.base import ExportOptions, Scrape
from advisor.exporters.collector import MetricsRenderer
from support.hosts import make_host
from support.metricnames import families_in, violations

GOLDEN = Path(__file__).resolve().parent / "metrics"
def test_the_rules_catch_the_names_they_are_for():
    bad = {"zfs_abd_scatter_order_3": "gauge", "zfs_dbuf_cache_level_2_bytes": "gauge",
           "zfs_zil_commit_count_total": "counter", "zfs_dbuf_cache_size_bytes_max": "gauge",
           "zfs_pool_bandwidth_bytes_per_second": "gauge", "zfs_pool_trim_bytes_written_total": "counter",
           "zfs_x_total": "gauge", "zfs_x_entries_count": "gauge"}
    assert len({v.split(" (")[0] for v in violations(bad)}) == len(bad)
    good = {"zfs_abd_scatter_chunks": "gauge", "zfs_pool_trim_written_bytes_total": "counter",
            "zfs_arc_l2_size_bytes": "gauge", "zfs_pool_latency_seconds": "histogram", "zfs_arc_c_max_bytes": "gauge"}
    assert violations(good) == []


@pytest.mark.parametrize("golden", sorted(GOLDEN.rglob("*.prom")), ids=lambda p: str(p.relative_to(GOLDEN)))
def test_recorded_families_follow_the_naming_conventions(golden):
    assert violations(families_in(golden.read_text())) == []


def test_every_option_on_follows_the_naming_conventions():
    options = ExportOptions(per_vdev=True, per_dataset=True, all_disks=True, diskstats=True)
    text = MetricsRenderer().render(Scrape(make_host(), options)).decode()
    assert violations(families_in(text)) == []
