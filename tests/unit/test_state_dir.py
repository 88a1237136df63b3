"""An unwritable state directory is found out at start, on real directories that refuse writes."""
from __future__ import annotations

import logging
import os

import pytest

from advisor.store.statedir import report_state_dir, unwritable_reason


def test_a_writable_state_dir_is_created_and_left_clean(tmp_path):
    state = tmp_path / "var" / "lib" / "zfs-advisor"
    assert unwritable_reason(state) is None
    assert state.is_dir() and list(state.iterdir()) == []


@pytest.mark.parametrize("case", ["a file in its place", "under a file", "procfs", "sysfs"])
def test_an_unwritable_state_dir_is_said_in_one_line(case, tmp_path, caplog):
    if case == "a file in its place":
        state = tmp_path / "state"
        state.write_text("x\n")
    elif case == "under a file":
        (tmp_path / "file").write_text("x\n")
        state = tmp_path / "file" / "state"
    else:  # kernel file systems refuse new files to root as well (tests may run as root)
        state = "/proc/self" if case == "procfs" else "/sys/kernel"
        if not os.path.isdir(state):
            pytest.skip(f"no {case} here")
    caplog.set_level(logging.WARNING)
    log = logging.getLogger("test-state-dir")
    assert report_state_dir(state, log) is False
    lines = [r.getMessage() for r in caplog.records if r.name == "test-state-dir"]
    assert len(lines) == 1 and "\n" not in lines[0] and str(state) in lines[0], lines
    assert "state_dir is not writable" in lines[0] and "read-only" in lines[0]


def test_serve_starts_with_an_unwritable_state_dir_and_says_so_once(tmp_path):
    """The real service process: it answers, and its log has the one line."""
    import json
    import urllib.request

    from support import REPO
    from support.service import Service

    (tmp_path / "file").write_text("x\n")
    host = REPO / "tests" / "fixtures" / "hosts" / "2.3.2" / "ssd-mirror2x2" / "idle"
    with (Service(host, tmp_path, env={"ZFS_ADVISOR_STATE_DIR": str(tmp_path / "file" / "state")}) as service,
          urllib.request.urlopen(f"http://127.0.0.1:{service.port}/healthz", timeout=30) as resp):
        assert resp.status == 200
    messages = [json.loads(line)["msg"] for line in service.log.read_text().splitlines() if line.startswith("{")]
    said = [m for m in messages if m.startswith("state_dir is not writable")]
    assert len(said) == 1 and "serving read-only" in said[0], messages
