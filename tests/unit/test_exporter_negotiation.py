"""/metrics answers in the format and encoding the scrape asks for; polls leave no info-level log line."""
from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from advisor.config.settings import Settings
from advisor.exporters.negotiation import response_headers, to_openmetrics, variant, wants_openmetrics
from advisor.process.logs import quiet_polls
from advisor.service.app import create_app

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "metrics" / "2.3.2" / "ssd-mirror2x2" / "idle.prom"
SNAPSHOT = REPO / "tests" / "fixtures" / "hosts" / "2.3.2" / "ssd-mirror2x2" / "idle"
# The Accept headers Prometheus sends (scrape/scrape.go): 2.x, and 3.x with its default scrape_protocols.
PROMETHEUS_2 = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
PROMETHEUS_3 = ("application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,"
                "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1")


@pytest.mark.parametrize("accept, openmetrics", [
    (PROMETHEUS_2, True), (PROMETHEUS_3, True), ("application/openmetrics-text", True),
    (None, False), ("*/*", False), ("text/plain;version=0.0.4", False),
    ("application/openmetrics-text;version=0.0.1", False),  # only 1.0.0 is written
    ("text/plain;q=0.9,application/openmetrics-text;q=0.5", False),
])
def test_openmetrics_only_when_preferred(accept, openmetrics):
    assert wants_openmetrics(accept) is openmetrics


def samples(families) -> set:
    return {(s.name, tuple(sorted(s.labels.items())), s.value) for f in families for s in f.samples}


def test_openmetrics_has_the_same_series_and_values_and_types():
    text = GOLDEN.read_bytes()
    om = to_openmetrics(text).decode()
    assert om.endswith("# EOF\n")
    families = {f.name: f for f in parse_openmetrics(om)}  # the strict parser: raises on a format error
    assert samples(families.values()) == samples(parse_text(text.decode()))
    assert families["zfs_arc_hits"].type == "counter"
    assert families["zfs_pool_properties"].type == "info"
    assert families["zfs_pool_latency_seconds"].type == "histogram"


async def test_gzip_and_openmetrics_through_the_app(http_client):
    client = await http_client(create_app(Settings(root=str(SNAPSHOT))))
    plain = await client.get("/metrics", headers={"Accept-Encoding": "identity"})
    body = await plain.read()
    assert "Content-Encoding" not in plain.headers
    assert plain.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    zipped = await client.get("/metrics", headers={"Accept-Encoding": "gzip", "Accept": PROMETHEUS_3},
                              auto_decompress=False)
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert zipped.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    raw = await zipped.read()
    assert len(raw) * 5 < len(body)
    assert samples(parse_openmetrics(gzip.decompress(raw).decode())) >= {
        ("zfs_advisor_facts_stale", (), 0.0)
    }


def test_gzip_refused_with_q0():
    openmetrics, gzip_it = variant({"Accept-Encoding": "gzip;q=0, identity"})
    assert not gzip_it and response_headers(openmetrics, gzip_it).get("Content-Encoding") is None


def access(line: str, status: int) -> logging.LogRecord:
    return logging.makeLogRecord({"name": "aiohttp.access", "first_request_line": line, "response_status": status})


def test_successful_polls_leave_no_access_log_line_but_everything_else_does():
    assert not quiet_polls(access("GET /metrics HTTP/1.1", 200))
    assert not quiet_polls(access("GET /healthz HTTP/1.1", 200))
    assert quiet_polls(access("GET /metrics HTTP/1.1", 503))
    assert quiet_polls(access("GET /recommend?workload=postgres HTTP/1.1", 200))
    assert quiet_polls(access("GET /metricsx HTTP/1.1", 200))
