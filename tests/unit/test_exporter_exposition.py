"""The fast text writer must write exactly what prometheus_client's generate_latest() writes."""
from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from advisor.exporters.base import ExportOptions, Scrape, go_float
from advisor.exporters.exposition import text
from support.hosts import make_host
from support.reference import reference_registry


class _Fixed:
    def __init__(self, families):
        self.families = families

    def collect(self):
        return self.families


class _Odd:
    """Families with everything that needs escaping or special values."""

    def collect(self):
        g = GaugeMetricFamily("odd_values", 'help with \\ backslash\nnewline and "quotes"', labels=["a", "b"])
        for i, v in enumerate([0, 1, -1.5, 1e-9, 4294967296, 1e21, float("inf"), float("-inf"), float("nan"), 2**60]):
            g.add_metric([f'v"{i}\\\n', "z"], v)
        yield g
        c = CounterMetricFamily("odd_count", "a counter", labels=["x"], created=None)
        c.add_metric(["1"], 3, created=1700000000.5)
        yield c


def test_same_bytes_as_generate_latest_for_every_collector_and_odd_values():
    registry = reference_registry(Scrape(host=make_host(datasets=5), options=ExportOptions(per_vdev=True, per_dataset=True)))
    registry.register(_Odd())
    families = list(registry.collect())
    assert len(families) > 60
    assert text(families) == generate_latest(_Fixed(families))


def test_empty_registry_is_empty_output():
    assert text(CollectorRegistry().collect()) == generate_latest(CollectorRegistry()) == b""


def test_a_rows_family_writes_what_the_same_samples_would():
    from advisor.exporters.exposition import RowsFamily, has_samples

    rows = RowsFamily("zfs_rows_test", "rows \\ with\nhelp", "counter", ["pool", "dataset"])
    assert not has_samples(rows)
    for i, value in enumerate([0, 7, 2**60, 1e-9]):
        rows.add((f'tank"{i}', f"tank/ds\\{i}"), value)
    plain = CounterMetricFamily("zfs_rows_test", "rows \\ with\nhelp", labels=["pool", "dataset"])
    for values, value in rows.rows:
        plain.add_metric(list(values), value)
    assert has_samples(rows)
    assert text([rows]) == text([plain]) == generate_latest(_Fixed([plain])) == generate_latest(_Fixed([rows]))
    assert text([rows]) == text([rows])  # the second time from the kept label text


@pytest.mark.parametrize("value, written", [
    (0.0, "0.0"), (1.0, "1.0"), (-1.0, "-1.0"), (0.25, "0.25"), (999999.0, "999999.0"),
    (7, "7.0"), (2**60, "1.152921504606847e+18"), (1e6, "1e+06"), (1234567.0, "1.234567e+06"), (1.00663296e10, "1.00663296e+10"), (1e16, "1e+16"),
    (float("inf"), "+Inf"), (float("-inf"), "-Inf"), (float("nan"), "NaN"),
])
def test_values_are_written_as_the_go_client_writes_them(value, written):
    # prometheus_client before 0.26 wrote 1.00663296e+010: the text is the exporter's own
    assert go_float(value) == written
