"""`zfs-advisor recommend` and `verify` print what /recommend answers."""
from __future__ import annotations

import json

import pytest

from advisor import cli
from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.host.collect import Collection
from support.hosts import synthetic_host


@pytest.fixture
def host(monkeypatch):
    host = synthetic_host("4kn-ashift9")

    async def fake_collect(root, timeout=10.0):
        return Collection(host)

    monkeypatch.setattr("advisor.cli.common.collect_from_root", fake_collect)
    monkeypatch.delenv("ZFS_ADVISOR_CONFIG", raising=False)
    monkeypatch.setenv("ZFS_ADVISOR_MODEL", "false")  # the rules' answer (the model: test_model_recommend.py)
    return host


def test_recommend_json_is_the_api_document(host, capsys):
    assert cli.main(["recommend", "--workload", "postgres", "--dataset", "tank/pg", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = recommend(host, load_rulebook(), "postgres", dataset="tank/pg")
    assert printed["target"] == expected.target.model_dump()
    assert [(r["rule"], r["current"], r["recommended"], r["apply"]) for r in printed["recommendations"]] == [
        (r.rule, r.current, r.recommended, r.apply) for r in expected.recommendations
    ]


def test_recommend_text_names_facts_and_commands(host, capsys):
    assert cli.main(["recommend", "--workload", "postgres", "--dataset", "tank/pg"]) == 0
    out = capsys.readouterr().out
    assert "sda, sdb report 4096-byte physical sectors but pool tank was created with ashift=9" in out
    assert "apply: zfs set primarycache=all tank/pg" in out
    assert "Sources disagree:" in out


def test_recommend_parameters_and_role(host, capsys):
    assert cli.main(["recommend", "--workload", "postgres", "--role", "wal", "--param", "page_size=16K", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["parameters"] == {"role": "wal", "page_size": "16K", "cache_percent": "25"}  # given, else default


def test_verify_lists_passed_failed_skipped_and_exits_1_on_failures(host, capsys):
    assert cli.main(["verify", "--workload", "postgres", "--dataset", "tank/pg"]) == 1
    out = capsys.readouterr().out
    assert "verify: failed: ashift on pool tank: 9 (expected >= 12) [ashift-physical-sector]" in out
    assert "verify: passed: sync on tank/pg: standard" in out
    assert out.rstrip().splitlines()[-1].startswith("verify: ")


def test_verify_exits_0_when_everything_passes(monkeypatch, capsys):
    host = synthetic_host("ssd-mirror2x2", version="2.3.1-1", busy_txgs=0)
    monkeypatch.setattr("advisor.cli.common.collect_from_root", lambda *a, **k: _done(host))
    for ds in host.datasets:
        for prop, value in (("compression", "lz4"), ("relatime", "on"), ("recordsize", "1048576")):
            ds.properties[prop].value = value
    assert cli.main(["verify", "--workload", "media", "--dataset", "tank"]) == 0
    out = capsys.readouterr().out
    assert "verify: failed" not in out and "verify: skipped: zfs_delay_scale" in out
    assert out.rstrip().endswith("0 failed, 1 skipped")


async def _done(host):
    return Collection(host)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["recommend", "--workload", "oracle"], "unknown workload 'oracle' (valid: backup, fileserver"),
        (["recommend", "--workload", "postgres", "--pool", "nope"], "no pool 'nope' on this host (valid: tank)"),
        (["verify", "--workload", "postgres", "--param", "page_size=3K"], "page_size='3K' is not valid"),
    ],
)
def test_bad_input_exits_2_with_the_valid_values(host, capsys, argv, message):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_broken_rules_exit_2(host, tmp_path, capsys):
    (tmp_path / "workloads").mkdir()
    assert cli.main(["recommend", "--workload", "postgres", "--rules", str(tmp_path)]) == 2
    assert "broken rules" in capsys.readouterr().err
