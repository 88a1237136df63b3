"""A stored `probe --efficiency` report reaches users: GET /v1/efficiency, /metrics and /recommend,
through the real app on the recorded ssd-mirror2x2 host, with a report recorded in the lab on that
layout (tests/fixtures/efficiency/PROVENANCE.md) stored as the probe stores it."""
from __future__ import annotations

import copy
import json
import logging
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor import cli
from advisor.config.settings import Settings
from advisor.service.app import create_app
from advisor.store.db import connect
from support import RECORDING
from support.probes import EFFICIENCY_MEASURED_AT, recorded_efficiency, seed_efficiency_report

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
MEASURE = ["zfs-advisor", "probe", "--pool", "tank", "--efficiency"]


@pytest.fixture
def report():
    return recorded_efficiency()


async def _client(http_client, state_dir):
    return await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(state_dir), model=False)))


def _samples(text: str, name: str) -> dict[tuple, float]:
    return {tuple(sorted(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples if s.name == name}


def _with_random_results(report: dict) -> dict:
    """The recorded report as a later probe writes it: each result names its test and unit, and a
    random test joins in `random_results` (where `probe --efficiency` puts them) with fields this
    service does not know."""
    later = copy.deepcopy(report)
    for result in later["results"]:
        result |= {"test": f"seq-{result['direction']}", "unit": "bytes/s"}
    later["random_results"] = [{"test": "rand-write-4k-sync", "unit": "IOPS", "direction": "write", "ratio": 0.27,
                             "measured": 405.0, "expected": 1500.0, "expectation": "2 x mirror of 2: 1 disk each = "
                             "2 disks", "diagnosis": ["sync writes without a log device"],
                             "threads": {"z_wr_iss": 0.98}}]
    later["cpu_threads"] = [{"name": "txg_sync", "busy_ratio": 0.4}]
    return later


# -- GET /v1/efficiency ------------------------------------------------------------------------

async def test_one_pool_s_report_with_when_it_was_measured(http_client, tmp_path, report):
    seed_efficiency_report(tmp_path)
    client = await _client(http_client, tmp_path)
    resp = await client.get("/v1/efficiency", params={"pool": "tank"})
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["pool"] == "tank"
    assert datetime.fromisoformat(body["measured_at"]) == datetime.fromtimestamp(EFFICIENCY_MEASURED_AT, UTC)
    assert body["age_seconds"] == pytest.approx(datetime.now(UTC).timestamp() - EFFICIENCY_MEASURED_AT,
                                                abs=60)
    assert body["measure_argv"] == MEASURE and body["measure"] == " ".join(MEASURE)
    # stored before results named their test: seq-<direction>, in the report as well
    assert [r["test"] for r in body["results"]] == [f"seq-{r['direction']}" for r in report["results"]]
    for served, stored in zip(body["results"], report["results"], strict=True):
        assert served["ratio"] == stored["ratio"] and served["diagnosis"] == stored["diagnosis"]
        assert served["measured"] == stored["pool_bytes_per_second"] and served["unit"] == "bytes/s"
    assert body["report"] == {**report, "results": [{**r, "test": f"seq-{r['direction']}"} for r in report["results"]]}


async def test_every_pool_s_latest_report_and_the_pools_never_measured(http_client, tmp_path, report):
    seed_efficiency_report(tmp_path, measured_at=EFFICIENCY_MEASURED_AT - 86400,
                           report={**report, "results": report["results"][:1]})
    seed_efficiency_report(tmp_path)  # the latest
    seed_efficiency_report(tmp_path, pool="gone")  # a pool no longer on the host keeps its report
    client = await _client(http_client, tmp_path)
    body = await (await client.get("/v1/efficiency")).json()
    assert [r["pool"] for r in body["reports"]] == ["gone", "tank"] and body["not_measured"] == []
    assert len(body["reports"][1]["results"]) == len(report["results"])


async def test_a_run_of_one_part_keeps_the_other_part_of_an_earlier_run(http_client, tmp_path, report):
    """`probe --efficiency random` after a whole run: the sequential results stay, each result says
    when it was measured, and /recommend says which came from the earlier run."""
    seed_efficiency_report(tmp_path)  # sequential, a day before
    later = EFFICIENCY_MEASURED_AT + 86400
    random_only = {**_with_random_results(report), "results": [], "tests": ["random"]}
    seed_efficiency_report(tmp_path, measured_at=later, report=random_only)
    client = await _client(http_client, tmp_path)
    body = await (await client.get("/v1/efficiency", params={"pool": "tank"})).json()
    assert datetime.fromisoformat(body["measured_at"]) == datetime.fromtimestamp(later, UTC)
    by_test = {r["test"]: r["measured_at"] for r in body["results"]}
    assert by_test == {"rand-write-4k-sync": later, **{f"seq-{r['direction']}": EFFICIENCY_MEASURED_AT
                                                       for r in report["results"]}}
    assert body["report"]["results"] == []  # the report itself is the latest, as stored
    item = _item(await (await client.get("/recommend")).json())
    day = datetime.fromtimestamp(EFFICIENCY_MEASURED_AT, UTC).strftime("%Y-%m-%d")
    assert f"(measured {day}, by an earlier run) reach" in item["explanation"]
    assert "andom writes (4K, sync) reach 0.27" in item["explanation"]  # the latest run's own: no date
    text = await (await client.get("/metrics")).text()
    assert {dict(k)["test"] for k in _samples(text, "zfs_advisor_pool_efficiency_ratio")} == set(by_test)


async def test_no_database_nothing_measured_and_none_created(http_client, tmp_path):
    client = await _client(http_client, tmp_path / "none")
    resp = await client.get("/v1/efficiency")
    assert resp.status == 200 and await resp.json() == {"reports": [], "not_measured": ["tank"]}
    resp = await client.get("/v1/efficiency", params={"pool": "tank"})
    error = (await resp.json())["error"]
    assert resp.status == 404 and error["valid"] == [] and "zfs-advisor probe --pool tank --efficiency" in error["reason"]
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("query, status, reason, valid", [
    ({"pool": "nosuch"}, 404, "no pool 'nosuch' on this host", ["tank"]),
    ({"pool": "bad/name"}, 400, "invalid pool name", None),
    ({"pool": "tank", "limit": "3"}, 400, "unknown query parameter 'limit'", ["pool"]),
])
async def test_bad_requests_say_why_and_what_is_valid(http_client, tmp_path, query, status, reason, valid):
    seed_efficiency_report(tmp_path)
    client = await _client(http_client, tmp_path)
    resp = await client.get("/v1/efficiency", params=query)
    error = (await resp.json())["error"]
    assert resp.status == status and reason in error["reason"] and error.get("valid") == valid


async def test_a_later_report_s_tests_and_unknown_fields_are_served(http_client, tmp_path, report):
    seed_efficiency_report(tmp_path, report=_with_random_results(report))
    client = await _client(http_client, tmp_path)
    body = await (await client.get("/v1/efficiency", params={"pool": "tank"})).json()
    assert [r["test"] for r in body["results"]][-1] == "rand-write-4k-sync"
    assert body["results"][-1]["unit"] == "IOPS" and body["results"][-1]["measured"] == 405.0
    assert body["report"]["random_results"][-1]["threads"] == {"z_wr_iss": 0.98}
    assert body["report"]["cpu_threads"] == [{"name": "txg_sync", "busy_ratio": 0.4}]


async def test_a_report_that_is_no_report_is_skipped_and_logged(http_client, tmp_path, report, caplog):
    seed_efficiency_report(tmp_path)
    conn = connect(tmp_path)
    conn.execute("INSERT INTO efficiency_reports (pool, measured_at, report_json) VALUES ('other', 1, '{\"cut')")
    conn.execute("INSERT INTO efficiency_reports (pool, measured_at, report_json) VALUES ('third', 1, ?)",
                 (json.dumps({"results": [{"direction": "read"}, {"test": "Bad Name!", "ratio": 1}, "x"]}),))
    conn.close()
    caplog.set_level(logging.WARNING, logger="advisor.evidence.efficiency")
    client = await _client(http_client, tmp_path)
    body = await (await client.get("/v1/efficiency")).json()
    assert [r["pool"] for r in body["reports"]] == ["tank", "third"] and body["reports"][1]["results"] == []
    logged = [r.getMessage() for r in caplog.records]
    assert any("pool other" in m and "skipped: not JSON" in m for m in logged), logged
    assert sum("pool third" in m and "left out" in m for m in logged) == 3, logged
    text = await (await client.get("/metrics")).text()
    assert set(_samples(text, "zfs_advisor_pool_efficiency_timestamp_seconds")) == {(("pool", "tank"),),
                                                                                    (("pool", "third"),)}


# -- /metrics ----------------------------------------------------------------------------------

async def test_metrics_export_each_test_s_ratio_and_when(http_client, tmp_path, report):
    seed_efficiency_report(tmp_path, report=_with_random_results(report))
    client = await _client(http_client, tmp_path)
    text = await (await client.get("/metrics")).text()
    ratios = _samples(text, "zfs_advisor_pool_efficiency_ratio")
    want = {f"seq-{r['direction']}": r["ratio"] for r in report["results"]} | {"rand-write-4k-sync": 0.27}
    assert ratios == {(("pool", "tank"), ("test", test)): ratio for test, ratio in want.items()}
    assert _samples(text, "zfs_advisor_pool_efficiency_timestamp_seconds") == {(("pool", "tank"),): EFFICIENCY_MEASURED_AT}
    assert _samples(text, "zfs_advisor_scrape_collector_success")[(("collector", "efficiency"),)] == 1
    families = set(re.findall(r"^# TYPE (zfs_advisor_pool_efficiency_\S+) ", text, re.MULTILINE))
    assert len(families) == 2 and all(f"`{f}`" in DOC.read_text() for f in families)


async def test_metrics_without_a_report_have_no_efficiency_series(http_client, tmp_path):
    client = await _client(http_client, tmp_path / "none")
    assert "zfs_advisor_pool_efficiency_" not in await (await client.get("/metrics")).text()


# -- /recommend --------------------------------------------------------------------------------

def _item(body: dict) -> dict | None:
    found = [r for r in body["recommendations"] if r["rule"] == "pool-efficiency"]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize("query", [{}, {"workload": "postgres"}])
async def test_recommend_cites_the_report_as_information(http_client, tmp_path, report, query):
    bare = await _client(http_client, tmp_path / "none")
    before = await (await bare.get("/recommend", params=query)).json()
    assert _item(before) is None  # never measured: nothing said about efficiency
    seed_efficiency_report(tmp_path)
    client = await _client(http_client, tmp_path)
    body = await (await client.get("/recommend", params=query)).json()
    item = _item(body)
    assert (item["status"], item["scope"], item["pool"], item["parameter"], item["source"]) == (
        "info", "pool", "tank", "efficiency", "probe")
    assert item["change"] is False and item["apply"] is None and item["expected_effect"] is None
    assert item["measure_argv"] == MEASURE
    day = datetime.fromtimestamp(EFFICIENCY_MEASURED_AT, UTC).strftime("%Y-%m-%d")
    assert f"measured {day}" in item["explanation"]
    for result in report["results"]:
        words = {"read": "reads", "write": "writes"}[result["direction"]]
        layout = result["expectation"].split(":")[0]
        assert f"equential {words} reach {result['ratio']:.2f} of what {layout} should give" in item["explanation"]
        assert all(sentence in item["explanation"] for sentence in result["diagnosis"])
        assert {"fact": f"efficiency.seq-{result['direction']}.ratio", "value": round(result["ratio"], 4)}.items() \
            <= next(e for e in item["evidence"] if e["fact"] == f"efficiency.seq-{result['direction']}.ratio").items()
    # information only: every other item and the counts are as without the report
    assert body["summary"] == before["summary"]
    assert [r for r in body["recommendations"] if r is not item] == before["recommendations"]
    text = await (await client.get("/recommend", params={**query, "format": "text"})).text()
    assert text.splitlines()[2].endswith(", 1 measured") and "info    [pool] efficiency on pool tank: seq-" in text
    assert "measure again: zfs-advisor probe --pool tank --efficiency" in text


def test_the_command_line_cites_it_too_and_verify_does_not_fail_on_it(tmp_path, monkeypatch, capsys):
    seed_efficiency_report(tmp_path)
    monkeypatch.delenv("ZFS_ADVISOR_CONFIG", raising=False)
    monkeypatch.setenv("ZFS_ADVISOR_MODEL", "false")
    monkeypatch.setenv("ZFS_ADVISOR_STATE_DIR", str(tmp_path))
    assert cli.main(["recommend", "--root", str(RECORDING), "--json"]) == 0
    assert _item(json.loads(capsys.readouterr().out))["status"] == "info"
    assert cli.main(["verify", "--root", str(RECORDING)]) == 0  # the recorded pool passes every rule
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("verify: info: efficiency on pool tank: seq-")] and \
        lines[-1].endswith(" 0 failed, 0 skipped")


async def test_recommend_names_a_test_it_had_not_known_of_from_its_name(http_client, tmp_path, report):
    seed_efficiency_report(tmp_path, report=_with_random_results(report))
    client = await _client(http_client, tmp_path)
    item = _item(await (await client.get("/recommend", params={"pool": "tank"})).json())
    assert item["current"].endswith(", rand-write-4k-sync 27%")
    assert ("Random writes (4K, sync) reach 0.27 of what 2 x mirror of 2 should give (1 disk each = 2 disks; "
            "405 IOPS of 1,500 IOPS): sync writes without a log device.") in item["explanation"]
