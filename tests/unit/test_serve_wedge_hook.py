"""The watchdog test hook of `zfs-advisor serve` (docs/deploy.md): off unless both variables say so.

The lab proves the watchdog restart under systemd (tests/lab/test_systemd.py); here a real `serve`
process shows that the hook wedges the event loop only when explicitly consented to.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from advisor.cli.serve import WEDGE_AFTER, WEDGE_CONSENT, WEDGE_GUARD, wedge_after
from support.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({}, None),
        ({WEDGE_AFTER: "5"}, None),  # one variable alone: off
        ({WEDGE_AFTER: "5", WEDGE_GUARD: "1"}, None),  # "1", "yes", "true" are no consent
        ({WEDGE_AFTER: "5", WEDGE_GUARD: "yes"}, None),
        ({WEDGE_GUARD: WEDGE_CONSENT}, None),
        ({WEDGE_AFTER: "soon", WEDGE_GUARD: WEDGE_CONSENT}, None),
        ({WEDGE_AFTER: "5", WEDGE_GUARD: WEDGE_CONSENT}, 5.0),
        ({WEDGE_AFTER: "-1", WEDGE_GUARD: WEDGE_CONSENT}, 0.0),
    ],
)
def test_the_hook_needs_both_variables(environ, expected):
    assert wedge_after(environ) == expected


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthz(port: int, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


def serve(env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ZFS_ADVISOR_")}
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--port", str(port)], cwd=REPO,
                            env={**clean, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    def answering() -> bool:
        assert proc.poll() is None, "serve exited before it answered /healthz"
        return healthz(port, 1)

    wait_until(answering, 30, "serve to answer /healthz", interval=0.1)
    return proc, port


def logged(proc: subprocess.Popen) -> list[str]:
    proc.kill()
    _, err = proc.communicate(timeout=20)
    return [json.loads(line)["msg"] for line in err.splitlines() if line.startswith("{")]


def test_with_consent_the_loop_wedges_and_stops_answering():
    proc, port = serve({WEDGE_AFTER: "1", WEDGE_GUARD: WEDGE_CONSENT})
    try:
        wait_until(lambda: not healthz(port, 1), 10, "the event loop to stop answering after the wedge")
    finally:
        messages = logged(proc)
    assert "test hook: wedging the event loop now" in messages


def test_without_consent_it_keeps_answering_and_says_why():
    proc, port = serve({WEDGE_AFTER: "0.5"})
    try:
        time.sleep(1.5)  # the behaviour under test: past the 0.5 s the wedge would have come at
        assert healthz(port, 5)
    finally:
        messages = logged(proc)
    assert f"{WEDGE_AFTER} is ignored: test hooks are off (docs/deploy.md)" in messages
    assert "test hook: wedging the event loop now" not in messages
