"""`zfs-advisor snapshot`: exit 1 when every command failed; a partial recording is kept, exit 0,
its failed commands named on stderr."""
from __future__ import annotations

import json

from advisor.cli.snapshot import failure_report
from advisor.host.snapshot import load_manifest
from support import HOSTS
from support.cli import run_cli

RECORDED = HOSTS / "2.3.2" / "hdd-mirror2x2" / "idle"


def test_a_recording_whose_commands_all_failed_exits_1(tmp_path):
    no_tools = tmp_path / "bin"  # a PATH without zfs and zpool: every command fails for real (exit 127)
    no_tools.mkdir()
    result = run_cli("snapshot", "--root", str(RECORDED), str(tmp_path / "snap"), env={"PATH": str(no_tools)})
    assert result.returncode == 1, result.stderr
    commands = json.loads((tmp_path / "snap" / "manifest.json").read_text())["commands"]
    assert commands and all(c["returncode"] == 127 for c in commands)
    assert f"({len(commands)} failed)" in result.stdout
    assert f"all {len(commands)} commands failed" in result.stderr and "zpool get -Hp all failed" in result.stderr


def test_a_partial_recording_exits_0_and_names_what_failed(capsys):
    # the lab's recording under load: `zdb -C tank` timed out, the other 7 commands worked
    manifest = load_manifest(HOSTS / "2.3.2" / "hdd-raidz1x4" / "load")
    failed = [c for c in manifest.commands if c.returncode != 0]
    assert len(failed) == 1 and len(manifest.commands) == 8
    assert failure_report(manifest, failed) == 0
    assert "zdb -C tank failed (exit 124)" in capsys.readouterr().err
    assert failure_report(manifest, []) == 0 and capsys.readouterr().err == ""
