"""The one lab recording that holds the per-pool dmu_tx_assign kstat (tests/fixtures/tx_assign/,
recorded with the write throttle engaged; the hosts' recordings predate it) served by the real app:
its zfs_pool_tx_assign_seconds family against a golden file, in the naming conventions, and the
whole body through promtool."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import FIXTURES, check_golden
from support.dashboard import GRAFANA, alternatives, panel_targets, resolve
from support.metricnames import families_in, violations
from support.service import Service

from .promserver import PrometheusServer

THROTTLED = FIXTURES / "tx_assign" / "2.3.2-ssd-mirror2x2-throttled"
GOLDEN = Path(__file__).resolve().parent / "tx_assign" / "2.3.2-ssd-mirror2x2-throttled.prom"


async def test_the_throttled_recordings_tx_assign_family(http_client, update_golden):
    client = await http_client(create_app(Settings(root=str(THROTTLED))))
    resp = await client.get("/metrics")
    assert resp.status == 200
    body = await resp.text()
    family = "".join(line + "\n" for line in body.splitlines()
                     if line.startswith(("zfs_pool_tx_assign_seconds", "# HELP zfs_pool_tx_assign_seconds",
                                         "# TYPE zfs_pool_tx_assign_seconds")))
    assert 'zfs_pool_tx_assign_seconds_count{pool="tank"} 720.0' in family
    check_golden(GOLDEN, family, update_golden, "zfs_pool_tx_assign_seconds of the throttled recording")
    assert violations(families_in(body)) == []
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: install Debian's `prometheus` package (tests/run does)"
    result = subprocess.run([promtool, "check", "metrics"], input=body.encode(), capture_output=True, timeout=60)
    assert result.returncode == 0, (result.stdout + result.stderr).decode()


def test_the_dashboards_txg_wait_panels_read_the_recording_in_prometheus(tmp_path):
    """The heatmap "Waiting for a txg", its median and p99, and the writes that waited over 1 ms
    (deploy/grafana): their queries, run in a real Prometheus that scrapes the service on the throttled
    recording, return the histogram's buckets, and one series per quantile and pool, for that instance
    (the fleet test's two recordings have no such kstat: their panels are empty by design there)."""
    panels = [(p, t) for p, t in panel_targets(GRAFANA / "zfs-advisor.json") if "zfs_pool_tx_assign_seconds" in t["expr"]]
    [(panel, target)] = [(p, t) for p, t in panels if p["type"] == "heatmap"]
    others = [t for p, t in panels if p["type"] == "timeseries"]
    assert sorted(t["legendFormat"] for t in others) == ["{{instance}} {{pool}}", "{{instance}} {{pool}} median",
                                                         "{{instance}} {{pool}} p99"]
    config = tmp_path / "config.toml"
    (tmp_path / "prometheus").mkdir()
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n')
    with Service(THROTTLED, tmp_path, "--config", str(config)) as service:
        instance = f"127.0.0.1:{service.port}"
        with PrometheusServer(tmp_path / "prometheus", targets=[instance], scrape_interval="1s") as prom:
            prom.wait_for("count_over_time(up[1m]) >= 5")
            result = prom.query(resolve(target["expr"], alternatives(instance), rate_interval="10s",
                                        job="zfs-advisor"))
            lines = {t["legendFormat"]: prom.query(resolve(t["expr"], alternatives(instance), rate_interval="10s",
                                                           job="zfs-advisor")) for t in others}
    # a replayed recording is constant: no assignment in the last 10 s, so no quantile (NaN) and 0 waits
    for name, series in lines.items():
        assert [(r["metric"]["instance"], r["metric"]["pool"]) for r in series] == [(instance, "tank")], name
    assert lines["{{instance}} {{pool}}"][0]["value"][1] == "0"
    buckets = {r["metric"]["le"] for r in result if r["metric"].get("instance") == instance}
    # one series per bucket the exporter writes (the golden file's), +Inf included
    exported = {line.split('le="')[1].split('"')[0] for line in GOLDEN.read_text().splitlines() if "_bucket{" in line}
    assert len(exported) == 21 and {float(le) for le in buckets} == {float(le) for le in exported}, sorted(buckets)


def test_the_txg_wait_lines_compute_quantiles_and_waits_over_1_ms(tmp_path):
    """The median and p99 lines and the writes over 1 ms, evaluated by promtool on series that grow
    each minute by the throttled recording's own counts (the golden file): 720 assignments a minute,
    141 of them within 1.05 ms, so 579 / 60 s over it; the quantiles interpolate in its buckets
    (median between 4.19 and 8.39 ms, p99 between 268 and 537 ms)."""
    import yaml

    counts = {line.split('le="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
              for line in GOLDEN.read_text().splitlines() if "_bucket{" in line}
    series = {f'zfs_pool_tx_assign_seconds_bucket{{job="zfs-advisor",instance="nas",pool="tank",le="{le}"}}':
              f"0+{n:g}x10" for le, n in counts.items()}
    series['zfs_pool_tx_assign_seconds_count{job="zfs-advisor",instance="nas",pool="tank"}'] = "0+720x10"
    lines = {t["legendFormat"]: t["expr"] for p, t in panel_targets(GRAFANA / "zfs-advisor.json")
             if p["type"] == "timeseries" and "zfs_pool_tx_assign_seconds" in t["expr"]}
    # promtool 2.42 compares exactly: Prometheus' own floating-point order, 1 ulp off a hand calculation
    # (4.194304 ms + 52/132 of the bucket; 268.435456 ms + 5.8/13 of it)
    expected = {"{{instance}} {{pool}} median": 0.005846605575757575, "{{instance}} {{pool}} p99": 0.3881989671384604,
                "{{instance}} {{pool}}": 9.65}
    assert set(lines) == set(expected)
    case = {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "promql_expr_test": [
                {"expr": resolve(lines[name], "nas", rate_interval="5m", job="zfs-advisor"), "eval_time": "10m",
                 "exp_samples": [{"labels": '{job="zfs-advisor",instance="nas",pool="tank"}', "value": value}]}
                for name, value in expected.items()]}
    path = tmp_path / "tx_assign_test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [case]}))
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: install Debian's `prometheus` package (tests/run does)"
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
