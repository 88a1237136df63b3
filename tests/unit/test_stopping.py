"""A stop ends within its deadline even while a worker thread is still busy
(advisor/server/stopping.py): the shape of `serve`'s exit, asyncio.run waiting for its executor."""
from __future__ import annotations

import json
import subprocess
import sys
import time

from support import REPO

# asyncio.run waits for the default executor's threads at exit, without a limit (Python 3.11): a
# request's worker thread that does not return holds the process.  The script starts one, then
# returns from main as `serve` does after SIGTERM.
SCRIPT = """
import asyncio, sys, threading, time
from advisor.process.logs import setup_logging
from advisor.server.stopping import exit_by_deadline

started = threading.Event()

def stuck_in_a_worker():
    started.set()
    time.sleep(3600)  # the behaviour under test: a worker that does not return

async def main(deadline):
    asyncio.get_running_loop().run_in_executor(None, stuck_in_a_worker)
    while not started.is_set():  # the worker is stuck before the exit is asked for
        await asyncio.sleep(0.01)
    if deadline:
        exit_by_deadline(float(deadline))
    return 0

setup_logging("info", "json")
sys.exit(asyncio.run(main(sys.argv[1])))
"""


def run(deadline: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, deadline], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_without_the_deadline_a_busy_worker_holds_the_exit():
    try:
        run("", timeout=3)
    except subprocess.TimeoutExpired:
        return
    raise AssertionError("the process exited although its worker thread was still busy")


def test_the_deadline_ends_the_process_and_says_what_was_still_running():
    t = time.monotonic()
    done = run("1", timeout=30)
    took = time.monotonic() - t
    assert done.returncode == 0, done.stderr
    assert took < 10, took
    logs = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    warning = [e for e in logs if e["level"] == "warning"]
    assert len(warning) == 1, done.stderr
    assert warning[0]["msg"].startswith("the stop took more than 1 s: exiting with work still under way")
    assert any(name.startswith("asyncio_") for name in warning[0]["threads"]), warning
    # each thread's stack, so the journal shows where the worker was
    assert 'in stuck_in_a_worker' in done.stderr, done.stderr
