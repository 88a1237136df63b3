"""`zfs-advisor recommend --format script`: a shell script whose commands are exactly the answer's."""
from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from advisor.engine.script import _comment
from support import HOSTS
from support.cli import run_cli

HOSTS_ASKED = [  # (recorded host, arguments): a new dataset with module changes; an existing dataset
    ("2.3.2/hdd-raidz2x6/idle", ["--workload", "postgres"]),
    ("2.3.2/hdd-mirror2x2/idle", ["--workload", "postgres", "--dataset", "tank/pg", "--param", "page_size=16K"]),
    ("2.1.11/near-full/load", ["--workload", "mysql"]),
]


def commands(script: str) -> list[str]:
    return [line for line in script.splitlines()
            if line.strip() and not line.startswith("#") and line != "set -eu"]


@pytest.mark.parametrize("host, argv", HOSTS_ASKED)
def test_the_script_runs_exactly_the_answers_commands(tmp_path, host, argv):
    env = {"ZFS_ADVISOR_STATE_DIR": str(tmp_path)}
    root = str(HOSTS.joinpath(*host.split("/")))
    made = run_cli("recommend", "--root", root, *argv, "--format", "script", env=env)
    assert made.returncode == 0, made.stderr
    answer = json.loads(run_cli("recommend", "--root", root, *argv, "--json", env=env).stdout)
    script = made.stdout
    (tmp_path / "advice.sh").write_text(script)
    checked = subprocess.run(["bash", "-n", str(tmp_path / "advice.sh")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert script.startswith("#!/bin/sh\n") and "\nset -eu\n" in script

    changes = [r for r in answer["recommendations"] if r["status"] == "change"]
    argv_lines = {shlex.join(r["apply_argv"]) for r in changes if r["apply_argv"]}
    module_lines = {r["apply"] for r in changes if r["scope"] == "module" and r["apply"]}
    lines = commands(script)
    assert len(lines) == len(set(lines))  # a shared `zfs create` runs once
    assert set(lines) == argv_lines | module_lines
    for line in module_lines:  # kept across reboots by the modprobe.d line of the same value
        value, name = re.fullmatch(r"echo (\S+) > /sys/module/zfs/parameters/(\w+)", line).groups()
        assert f"#   options zfs {name}={value}" in script.splitlines()
    for rec in answer["recommendations"]:  # the rest: comments only
        if rec["status"] in ("passed", "undecided"):
            assert any(line.startswith("#") and rec["parameter"] in line for line in script.splitlines())


def test_every_text_of_the_answer_stays_a_comment():
    lines = _comment("a title\nrm -rf /\r; reboot " + "x" * 300)
    assert lines and all(line.startswith("#") for line in lines)
