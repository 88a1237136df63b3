"""Commands that print an answer keep stderr for warnings and errors; --verbose brings the log back."""
from __future__ import annotations

from support import HOSTS
from support.cli import run_cli

HOST = HOSTS / "2.3.2" / "hdd-mirror2x2" / "idle"


def test_an_answer_prints_no_info_line_unless_verbose(tmp_path):
    env = {"ZFS_ADVISOR_STATE_DIR": str(tmp_path), "ZFS_ADVISOR_LOG_LEVEL": "info"}
    quiet = run_cli("recommend", "--root", str(HOST), "--workload", "postgres", env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert "tank" in quiet.stdout and quiet.stderr == ""
    verbose = run_cli("recommend", "-v", "--root", str(HOST), "--workload", "postgres", env=env)
    assert verbose.returncode == 0 and verbose.stdout.splitlines()[2:] == quiet.stdout.splitlines()[2:]
    assert " INFO advisor." in verbose.stderr  # the model's "loaded" line, or its reason for not loading


def test_errors_still_reach_stderr_with_their_exit_code(tmp_path):
    bad = run_cli("recommend", "--root", str(HOST), "--workload", "nosuch",
                  env={"ZFS_ADVISOR_STATE_DIR": str(tmp_path)})
    assert bad.returncode == 2 and "nosuch" in bad.stderr
