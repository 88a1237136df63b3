"""`zfs-advisor recommend --workload auto` (or --dataset alone): the API's code path for auto, which
needs a window of I/O observations that one run of the command does not have: it says so on stderr
and answers with the pool-level advice, as /recommend does when it is not sure."""
from __future__ import annotations

import json

import pytest

from support import HOSTS
from support.cli import run_cli

HOST = HOSTS / "2.3.2" / "hdd-mirror2x2" / "idle"


@pytest.fixture
def env(tmp_path):
    return {"ZFS_ADVISOR_STATE_DIR": str(tmp_path)}


def test_a_dataset_alone_is_auto_and_falls_back_to_the_pool_level_advice(env):
    auto = run_cli("recommend", "--root", str(HOST), "--dataset", "tank/pg", "--json", env=env)
    assert auto.returncode == 0, auto.stderr
    assert "needs a window of I/O observations" in auto.stderr and "pool-level advice" in auto.stderr
    answer = json.loads(auto.stdout)
    assert answer["workload"] == "general" and answer["target"]["pool"] == "tank"
    assert [(r["dataset"], r["workload"], r["used"]) for r in answer["recognised"]] == [("tank/pg", "unknown", False)]
    general = json.loads(run_cli("recommend", "--root", str(HOST), "--pool", "tank", "--json", env=env).stdout)
    assert [(r["rule"], r["status"]) for r in answer["recommendations"]] == \
        [(r["rule"], r["status"]) for r in general["recommendations"]]
    text = run_cli("recommend", "--root", str(HOST), "--workload", "auto", "--dataset", "tank/pg", env=env)
    assert text.returncode == 0 and "dataset tank/pg: recognised as unknown" in text.stdout


def test_auto_without_a_dataset_is_the_general_answer(env):
    auto = run_cli("recommend", "--root", str(HOST), "--workload", "auto", "--json", env=env)
    assert auto.returncode == 0, auto.stderr
    answer = json.loads(auto.stdout)
    assert answer["workload"] == "general" and answer["recognised"] == []


@pytest.mark.parametrize("argv, message", [
    (["--workload", "auto", "--param", "page_size=16K"], "belongs to a workload"),
    (["--dataset", "tank/nosuch"], "no dataset 'tank/nosuch'"),
    (["--workload", "nosuch"], "general, auto)"),
])
def test_bad_auto_targets_exit_2_with_the_valid_values(env, argv, message):
    bad = run_cli("recommend", "--root", str(HOST), *argv, env=env)
    assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr
