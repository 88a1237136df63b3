"""deploy/prometheus: the alert rules load, their promtool unit tests pass, and they use real metrics."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def promtool(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("promtool")
    assert tool, "promtool not found: install Debian's `prometheus` package (tests/run does)"
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=300, cwd=DEPLOY)


@pytest.mark.parametrize(
    "args",
    [
        ("check", "rules", "alerts.yml"),
        ("check", "config", "scrape.yml"),
        ("test", "rules", *sorted(p.name for p in DEPLOY.glob("*_test.yml"))),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_promtool_accepts(args):
    result = promtool(*args)
    assert result.returncode == 0, result.stdout + result.stderr


def test_alerts_only_use_documented_metrics():
    text = (DEPLOY / "alerts.yml").read_text()
    exprs = " ".join(re.findall(r"expr:\s*(?:>-\s*)?((?:.+\n?)+?)\s+(?:for|labels):", text))
    names = set(re.findall(r"\b((?:zfs|disk)_[a-z0-9_]+)", exprs)) - {"zfs_delay_min_dirty_percent"}
    doc = DOC.read_text()
    documented = {n for n in names if n in doc or n.removesuffix("_total") in doc}
    assert names and names == documented, f"undocumented: {sorted(names - documented)}"


def test_every_alert_has_a_promtool_case_that_fires_it():
    import yaml

    rules = yaml.safe_load((DEPLOY / "alerts.yml").read_text())
    alerts = {r["alert"] for group in rules["groups"] for r in group["rules"] if "alert" in r}
    fired = {
        case["alertname"]
        for path in DEPLOY.glob("*_test.yml")
        for test in yaml.safe_load(path.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert len(alerts) >= 10
    assert sorted(alerts - fired) == [], "alerts without a promtool test case in which they fire"
