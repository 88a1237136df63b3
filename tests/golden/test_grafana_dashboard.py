"""deploy/grafana: the dashboard is valid JSON whose every query parses in a real Prometheus
and uses only metrics that docs/metrics.md lists."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .promserver import PrometheusServer

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "zfs-advisor.json"


def expressions() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def test_dashboard_shape():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] == "zfs-advisor" and dash["panels"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    assert {v["name"] for v in dash["templating"]["list"]} == {"datasource", "instance", "pool"}


def test_dashboard_metrics_are_documented():
    doc = (REPO / "docs" / "metrics.md").read_text()
    names = {n for e in expressions() for n in re.findall(r"\b((?:zfs|disk)_[a-z0-9_]+)", e)}
    base = {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}
    missing = sorted(n for n in base if n not in doc and n.removesuffix("_total") not in doc)
    assert not missing, missing


def test_every_query_parses_in_prometheus(tmp_path):
    with PrometheusServer(tmp_path) as prom:
        for expr in expressions():
            grafana_free = expr.replace("$__rate_interval", "1m").replace("$instance", ".*").replace("$pool", ".*")
            prom.query(grafana_free)  # raises PromQLError on bad_data
