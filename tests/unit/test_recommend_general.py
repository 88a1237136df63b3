"""The general answer: /recommend with no workload (or workload=general) and `zfs-advisor
recommend` without --workload give the pool-level and module advice that holds for any workload."""
from __future__ import annotations

import pytest

from advisor.cli import main
from advisor.config.settings import Settings
from advisor.engine.loader import RulesError, load_rulebook
from advisor.engine.models import GENERAL
from advisor.engine.service import general_rules, recommend
from advisor.engine.text import recommend_text
from advisor.service.app import create_app
from support import RECORDING
from support.hosts import synthetic_host

BOOK = load_rulebook()


def test_general_rules_read_no_workload_fact_and_cover_the_pool_questions():
    ids = {r.id for r in general_rules(BOOK)}
    assert {"ashift-physical-sector", "no-redundancy", "raidz-width", "pool-health", "free-space",
            "fragmentation", "txg-timeout"} <= ids
    for rule in general_rules(BOOK):
        assert rule.scope != "dataset" and rule.workloads == "all"
        assert not any(f.startswith("workload.") for f in rule.facts()), rule.id
    # chosen by what they read, not by a list: these depend on the workload
    assert not {"slog-for-sync-on-hdd", "geometry-raidz-random-io", "async-write-min-active-hdd"} & ids


def test_the_general_answer_judges_pools_and_modules_only():
    response = recommend(synthetic_host("hdd-stripe5"), BOOK, None, pool="tank")
    assert response.workload == GENERAL and response.parameters == {}
    assert response.target.pool == "tank" and response.target.dataset is None
    assert {r.scope for r in response.recommendations} <= {"pool-create", "pool", "module"}
    by_rule = {r.rule: r for r in response.recommendations}
    assert by_rule["no-redundancy"].status == "change"
    assert by_rule["pool-health"].status == "passed" and by_rule["pool-health"].current == "ONLINE"
    assert by_rule["ashift-physical-sector"].status == "passed"
    assert recommend(synthetic_host("hdd-stripe5"), BOOK, GENERAL, pool="tank").recommendations == response.recommendations


def test_a_degraded_pool_is_the_first_thing_said():
    host = synthetic_host("ssd-mirror2x2")
    host.pools[0].health = "DEGRADED"
    rec = next(r for r in recommend(host, BOOK, None).recommendations if r.rule == "pool-health")
    assert rec.status == "change" and rec.current == "DEGRADED" and rec.kind == "warning"
    assert "zpool status -x tank" in rec.apply_note
    # a workload's answer carries it too
    assert any(r.rule == "pool-health" and r.status == "change" for r in recommend(host, BOOK, "postgres").recommendations)


def test_the_text_says_no_workload_was_given():
    text = recommend_text(recommend(synthetic_host(), BOOK, None))
    assert text.startswith("zfs-advisor: general recommendations, for any workload\n")
    assert "No workload given" in text


async def test_recommend_without_a_workload_over_http(http_client):
    client = await http_client(create_app(Settings(root=str(RECORDING))))
    body = await (await client.get("/recommend", params={"pool": "tank"})).json()
    assert body["workload"] == "general" and body["summary"]["change"] + body["summary"]["passed"] > 0
    assert all(r["scope"] != "dataset" for r in body["recommendations"])
    assert (await client.get("/recommend")).status == 200  # every pool
    doc = await (await client.get("/openapi.json")).json()
    workload = doc["paths"]["/recommend"]["get"]["parameters"][0]
    assert workload["name"] == "workload" and not workload["required"] and "general" in workload["schema"]["enum"]


def test_cli_recommend_without_a_workload(capsys):
    assert main(["recommend", "--root", str(RECORDING), "--pool", "tank"]) == 0
    assert capsys.readouterr().out.startswith("zfs-advisor: general recommendations, for any workload on pool tank")
    # a dataset without a workload is the recognised workload's advice (as /recommend?dataset=); one
    # that does not exist is refused with the ones that do
    assert main(["recommend", "--root", str(RECORDING), "--dataset", "tank/x"]) == 2
    assert "no dataset 'tank/x' on this host (valid: tank, " in capsys.readouterr().err


def test_no_workload_profile_may_be_called_general(tmp_path):
    (tmp_path / "workloads").mkdir()
    source = (BOOK.directory / "workloads" / "postgres.yaml").read_text()
    (tmp_path / "workloads" / "general.yaml").write_text(source.replace("name: postgres", "name: general", 1))
    with pytest.raises(RulesError, match="`general` is reserved"):
        load_rulebook(tmp_path)


@pytest.mark.parametrize("layout", ["4kn-ashift9", "hdd-raidz1x4", "ssd-mirror2x2", "hdd-stripe5"])
def test_a_passed_item_recommends_what_it_has_never_the_threshold(layout):
    host = synthetic_host(layout)
    for workload in [None, *sorted(BOOK.workloads)]:
        for rec in recommend(host, BOOK, workload).recommendations:
            if rec.status == "passed":
                assert rec.recommended == rec.current, (workload, rec.rule, rec.requirement)


def test_cli_verify_without_a_workload(capsys):
    code = main(["verify", "--root", str(RECORDING)])
    out = capsys.readouterr().out
    assert "verify: passed: health on pool tank: ONLINE" in out
    assert code == (1 if "verify: failed:" in out else 0)
