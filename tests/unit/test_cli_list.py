"""`zfs-advisor list`: every workload of the rule book, one line each, and the /v1/workloads document."""
from __future__ import annotations

import json

from advisor.engine.loader import load_rulebook
from support.cli import run_cli


def test_list_names_every_workload_with_its_title():
    result = run_cli("list")
    assert result.returncode == 0 and result.stderr == ""
    book = load_rulebook()
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == sorted(book.workloads)
    for line in lines:
        workload = book.workloads[line.split()[0]]
        assert f"  {workload.title}: {workload.io.description}" in line


def test_list_json_is_the_workloads_document():
    result = run_cli("list", "--json")
    assert result.returncode == 0
    listed = json.loads(result.stdout)["workloads"]
    assert [w["name"] for w in listed] == sorted(load_rulebook().workloads)
    postgres = next(w for w in listed if w["name"] == "postgres")
    assert postgres["parameters"]["page_size"]["default"] == "8K" and "[global]" in postgres["fio_job"]


def test_list_reads_the_rules_it_is_given(tmp_path):
    missing = run_cli("list", "--rules", str(tmp_path / "none"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
