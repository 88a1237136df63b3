"""deploy/grafana: the dashboard is what build_dashboard.py writes, uses only metrics that
docs/metrics.md lists, and every query of every panel, run in a real Prometheus scraping two real
services whose pools share a name (`tank`), returns series for both instances, each keeping its
`instance` label and its own legend: no host's pool merged into another's.

The services run with `metrics_diskstats = true`: the disk panels read node_exporter's
node_disk_* where it is scraped, which a replayed recording has no node_exporter for, and
else zfs-advisor's own diskstats counters, which this setting turns on (off by default).
With it off, those panels would be empty here and their witness (no disk counters from
either) would say so: the check would prove nothing about them.

`pytest -s` prints the series each query returned per instance."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.request
from collections import Counter

import pytest

from advisor.exporters.pools import HEALTH_STATES, UNKNOWN_HEALTH
from support import HOSTS
from support.changes import seed_change
from support.dashboard import GRAFANA, alternatives, builder, instances_of, legend, panel_targets, resolve, why_empty
from support.probes import seed_efficiency_report, seed_recordsize_probe
from support.service import Service

from .promserver import PrometheusServer

DASHBOARD = GRAFANA / "zfs-advisor.json"
# Two layouts, one pool name: 4K-sector disks at ashift 9 (open advice), and an SSD+HDD mirror under load.
HOSTS_SCRAPED = [HOSTS / "2.3.2" / "4kn-ashift9" / "idle", HOSTS / "2.3.2" / "mixed-mirror-ssd-hdd" / "load"]
WORKLOADS = {"tank/pg": "postgres", "tank/home": "postgres"}
RATE_INTERVAL = "10s"  # ten 1 s scrapes


def expressions() -> list[str]:
    return [t["expr"] for _, t in panel_targets(DASHBOARD)]


def test_the_dashboard_is_what_build_dashboard_writes():
    assert DASHBOARD.read_text() == builder().render(), "run: python3 deploy/grafana/build_dashboard.py > " \
                                                         "deploy/grafana/zfs-advisor.json"


def test_dashboard_shape():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] == "zfs-advisor" and dash["panels"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    assert [v["name"] for v in dash["templating"]["list"]] == ["datasource", "job", "instance", "pool"]
    for panel, target in panel_targets(DASHBOARD):
        assert '$job' in target["expr"] and '$instance' in target["expr"], panel["title"]
        if panel["type"] == "table":
            assert target["format"] == "table" and target["instant"], panel["title"]


def test_every_pool_health_has_a_colour_and_only_online_is_green():
    (health,) = [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["title"] == "Health"]
    (state,) = [o for o in health["fieldConfig"]["overrides"] if o["matcher"]["options"] == "state"]
    (mapping, _other_values) = [p["value"] for p in state["properties"] if p["id"] == "mappings"][0]
    colours = {state: option["color"] for state, option in mapping["options"].items()}
    assert set(colours) == {*HEALTH_STATES, UNKNOWN_HEALTH}
    assert [s for s, c in colours.items() if c == "green"] == ["ONLINE"]
    assert colours["SUSPENDED"] == "dark-red" and colours["DEGRADED"] == "red"


def test_dashboard_metrics_are_documented():
    doc = (GRAFANA.parents[1] / "docs" / "metrics.md").read_text()
    dash = json.loads(DASHBOARD.read_text())
    annotations = [a["expr"] for a in dash["annotations"]["list"] if "expr" in a]
    names = {n for e in expressions() + annotations for n in re.findall(r"\b((?:zfs|disk)_[a-z0-9_]+)", e)}
    base = {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}
    missing = sorted(n for n in base if n not in doc and n.removesuffix("_total") not in doc)
    assert not missing, missing


# -- two services, one Prometheus ------------------------------------------------------------------

def config_file(directory, state_dir):
    path = directory / "config.toml"
    workloads = "".join(f'"{dataset}" = "{workload}"\n' for dataset, workload in WORKLOADS.items())
    # the disk panels' counters: node_exporter's, which a recording has not, or these (module docstring)
    path.write_text(f'state_dir = "{state_dir}"\nmetrics_diskstats = true\n\n[workloads]\n{workloads}')
    return path


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Two services on two recordings, both scraped every second by one Prometheus for ~10 s."""
    services, state_dirs = [], []
    try:
        for root in HOSTS_SCRAPED:
            work = tmp_path_factory.mktemp(root.parent.name)
            state_dirs.append(work / "state")
            seed_recordsize_probe(work / "state")  # an expected effect for tank/home's recordsize
            seed_change(work / "state", root)  # tank/pg's recordsize 8192 -> 16384 an hour ago, measured better
            if not services:  # the efficiency panels: data on the first, empty by design on the second
                seed_efficiency_report(work / "state")
            services.append(Service(root, work, "--config", str(config_file(work, work / "state"))).__enter__())
            # /recommend waits for the model's fit, which a scrape waits for only briefly
            query = "workload=postgres&dataset=tank/home"
            urllib.request.urlopen(f"http://127.0.0.1:{services[-1].port}/recommend?{query}", timeout=300).read()
        for state_dir in state_dirs:  # a run that ends now: the annotation shows the 2 minutes after it
            seed_recordsize_probe(state_dir)
        targets = [f"127.0.0.1:{s.port}" for s in services]
        with PrometheusServer(tmp_path_factory.mktemp("prometheus"), targets=targets, scrape_interval="1s") as prom:
            prom.wait_for("count(up == 1) == 2")
            prom.wait_for("count(count_over_time(up[1m]) >= 12) == 2")
            # two pools named tank, not one host twice: two pool guids
            assert len({r["metric"]["guid"] for r in prom.query('zfs_pool_properties_info{pool="tank"}')}) == 2
            yield prom, targets
    finally:
        for service in services:
            service.__exit__()


def test_every_panel_returns_one_series_per_instance_of_two(fleet):
    prom, instances = fleet
    both = alternatives(*instances)
    variables = {"rate_interval": RATE_INTERVAL, "job": "zfs-advisor", "pool": "tank"}
    for variable in json.loads(DASHBOARD.read_text())["templating"]["list"][1:]:
        query = re.fullmatch(r"label_values\((.*), (\w+)\)", variable["definition"])
        found = {r["metric"].get(query[2]) for r in prom.query(resolve(query[1], both, **variables))}
        assert len(found) == (1 if variable["name"] in ("job", "pool") else 2), (variable["name"], found)
    table, failures = [], []
    legends: dict[int, Counter] = {}
    for panel, target in panel_targets(DASHBOARD):
        result = prom.query(resolve(target["expr"], both, **variables))
        per_instance = Counter(r["metric"].get("instance") for r in result)
        notes = []
        for instance in instances:
            if per_instance[instance]:
                continue
            reason = why_empty(prom, target["expr"], resolve(target["expr"], both, **variables), instance,
                               **variables)
            notes.append(f"{instance.rsplit(':', 1)[1]} empty by design: {reason}" if reason else "")
            if reason is None:
                failures.append(f"{panel['title']} {target['refId']}: no series for {instance}")
        if set(per_instance) - set(instances):
            failures.append(f"{panel['title']} {target['refId']}: series without their instance: {set(per_instance)}")
        names = legends.setdefault(panel["id"], Counter())
        for r in result:
            labels = r["metric"]
            name = (legend(target["legendFormat"], labels) if panel["type"] == "timeseries"
                    else f"{target['refId']} {json.dumps(labels, sort_keys=True)}")
            names[(labels.get("instance"), name) if panel.get("repeat") == "instance" else name] += 1
        table.append(f"{per_instance[instances[0]]:4d} {per_instance[instances[1]]:4d}  "
                     f"{panel['title']} {target['refId']}  {'; '.join(n for n in notes if n)}")
    for panel_id, names in legends.items():
        twice = [name for name, n in names.items() if n > 1]
        if twice:
            failures.append(f"panel {panel_id}: two series drawn as one: {twice}")
    print(f"\nseries per instance ({instances[0]}, {instances[1]}) and panel (target)\n" + "\n".join(table))
    assert not failures, "\n".join(failures)


def test_probe_runs_are_annotations_per_instance(fleet):
    prom, instances = fleet
    both = alternatives(*instances)
    (probe,) = [a for a in json.loads(DASHBOARD.read_text())["annotations"]["list"] if a["name"] == "Probe runs"]
    runs = prom.query(resolve(probe["expr"], both, job="zfs-advisor", pool="tank"))
    assert instances_of(runs) == set(instances)
    assert {r["metric"]["workload"] for r in runs} == {"postgres"}


def test_the_setting_changes_annotation_marks_the_two_minutes_after_each_change(fleet):
    """Each service has one change record, seen an hour ago (tests/support/changes.py: a replayed
    recording never changes by itself): the annotation's query, with the variables resolved as
    Grafana sends them, has it a minute after the change and not now."""
    prom, instances = fleet
    (changes,) = [a for a in json.loads(DASHBOARD.read_text())["annotations"]["list"]
                  if a["name"] == "Setting changes"]
    expr = resolve(changes["expr"], alternatives(*instances), job="zfs-advisor", pool="tank")
    seen = {r["metric"]["instance"]: (r["metric"], float(r["value"][1]))
            for r in prom.query("zfs_advisor_change_timestamp_seconds")}
    assert set(seen) == set(instances)
    for instance, (labels, at) in seen.items():
        assert (labels["dataset"], labels["parameter"], labels["old"], labels["new"], labels["verdict"]) == \
            ("tank/pg", "recordsize", "8192", "16384", "better")
        assert at < time.time() - 120
        then = prom.query(expr.replace("time()", repr(at + 60)))
        assert [(r["metric"]["instance"], float(r["value"][1])) for r in then
                if r["metric"]["instance"] == instance] == [(instance, at)]
    assert prom.query(expr) == []
    assert set(changes["tagKeys"].split(",")) == {"instance", "pool", "dataset", "parameter"}


def test_the_learnt_panels_show_each_instances_probe_and_change(fleet):
    """The row "What the advisor learnt", on each service's seeded probe run and change: the probe's
    best and baseline recordsize with their IOPS and write p99 (tests/support/probes.py), the change's
    verdict beside its measured effect, and the budget the run used against the default limit."""
    prom, instances = fleet
    both = alternatives(*instances)
    variables = {"rate_interval": RATE_INTERVAL, "job": "zfs-advisor", "pool": "tank"}

    def answer(title: str, ref: str = "A") -> list[dict]:
        (target,) = [t for p, t in panel_targets(DASHBOARD) if p["title"] == title and t["refId"] == ref]
        return prom.query(resolve(target["expr"], both, **variables))

    iops = answer("Probe IOPS: best and baseline (latest completed run)")
    assert sorted((r["metric"]["instance"], r["metric"]["candidate"], r["metric"]["value"], float(r["value"][1]))
                  for r in iops) == sorted((i, c, v, pytest.approx(n)) for i in instances
                                           for c, v, n in (("best", "8K", 3447.85), ("baseline", "128K", 1829.45)))
    p99 = answer("Probe write p99: best and baseline (latest completed run)")
    assert {(r["metric"]["instance"], r["metric"]["value"], float(r["value"][1])) for r in p99} == \
        {(i, v, s) for i in instances for v, s in (("8K", 0.0016302), ("128K", 0.0161874))}
    effect = answer("Measured effect of each change (after / before)")
    assert {(r["metric"]["instance"], r["metric"]["metric"], r["metric"]["verdict"]) for r in effect
            if r["metric"]["metric"] == "iops"} == {(i, "iops", "better") for i in instances}
    assert all(float(r["value"][1]) == pytest.approx(2.0, rel=0.05) for r in effect if r["metric"]["metric"] == "iops")
    verdicts = answer("Setting changes and their verdicts")
    assert {(r["metric"]["instance"], r["metric"]["verdict"]) for r in verdicts} == {(i, "better") for i in instances}
    used = answer("Probe time used in 24 h vs [profiler] daily_seconds")
    allowed = answer("Probe time used in 24 h vs [profiler] daily_seconds", "B")
    assert instances_of(used) == instances_of(allowed) == set(instances)
    assert {float(r["value"][1]) for r in allowed} == {1800.0}  # [profiler] daily_seconds' default


def test_a_pool_never_scanned_is_never_not_missing(fleet):
    """No recording was ever scrubbed: the scan age panel says so (-1, shown as "never"), where a
    query of zfs_pool_scan_end_timestamp_seconds alone would show nothing."""
    prom, instances = fleet
    (target,) = [t for p, t in panel_targets(DASHBOARD) if p["title"] == "Time since the last scan"]
    ages = prom.query(resolve(target["expr"], alternatives(*instances), job="zfs-advisor", pool="tank"))
    assert sorted((r["metric"]["instance"], r["value"][1]) for r in ages) == [(i, "-1") for i in sorted(instances)]


def test_disk_panels_join_node_exporters_counters_to_the_disks_behind_the_pools(tmp_path):
    """The default (metrics_diskstats off) on a host with node_exporter, which no recording has: the
    disk panels' queries, evaluated by promtool on series as node_exporter and zfs-advisor write them.
    `nas` has node_exporter and diskstats on: node_exporter's counters, once per disk, only for the
    disk behind a pool; `old` has no node_exporter but diskstats on: its own counters; `bare` neither,
    the default without node_exporter (the lab's service): no series, and the witness says why."""
    import yaml

    info = 'zfs_advisor_disk_info{job="zfs-advisor",instance="%s",device="%s",model="m",media="hdd"}'
    series = {
        'node_disk_io_time_seconds_total{job="node",instance="nas",device="sda"}': "0+30x10",  # 0.5 s/s
        'node_disk_io_time_seconds_total{job="node",instance="nas",device="vda"}': "0+60x10",  # no pool on it
        info % ("nas", "sda"): "1x10",
        'zfs_advisor_disk_io_time_seconds_total{job="zfs-advisor",instance="nas",device="sda"}': "0+6x10",
        info % ("old", "sdb"): "1x10",
        'zfs_advisor_disk_io_time_seconds_total{job="zfs-advisor",instance="old",device="sdb"}': "0+12x10",
        info % ("bare", "sdc"): "1x10",
    }
    (target,) = [t for p, t in panel_targets(DASHBOARD) if p["title"] == "Utilisation"]
    hosts = alternatives("nas", "old", "bare")
    expr = resolve(target["expr"], hosts, rate_interval="5m", job="zfs-advisor")
    witness = resolve(builder().by_design()[target["expr"]].expr, hosts, job="zfs-advisor")
    case = {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "promql_expr_test": [
                {"expr": expr, "eval_time": "10m", "exp_samples": [
                    {"labels": '{instance="nas",device="sda"}', "value": 0.5},
                    {"labels": '{instance="old",device="sdb"}', "value": 0.2}]},
                {"expr": witness, "eval_time": "10m", "exp_samples": [
                    {"labels": '{job="zfs-advisor",instance="bare"}', "value": 1}]}]}
    path = tmp_path / "disks_test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [case]}))
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: install Debian's `prometheus` package (tests/run does)"
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
