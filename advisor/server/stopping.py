"""A stop that ends within its deadline, whatever is still running.

`systemctl stop` sends SIGTERM and, TimeoutStopSec (30 s) later, SIGKILL: the unit then counts
as failed, and nothing says what held the stop up.  What can hold it is work the event loop no
longer controls: a worker thread still rendering or parsing (asyncio waits for its executor's
threads at exit, without a limit), a request handler still running (aiohttp waits for it), a
`zpool` child that a SIGKILL cannot end while it waits in the kernel.  None of it writes to a
pool; the state dir is SQLite, whose journal makes an interrupted write as if it never began.
So past the deadline the process says what was still running, where (each thread's stack), and
exits.
"""
from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading

log = logging.getLogger("advisor")

# Below the unit's TimeoutStopSec=30s, with room for systemd to see the exit.
STOP_DEADLINE_SECONDS = 20.0
# How long requests under way at SIGTERM may take to finish (aiohttp's shutdown_timeout, 60 s
# by default: longer than the whole stop may take).
REQUESTS_GRACE_SECONDS = 10.0


def exit_by_deadline(seconds: float = STOP_DEADLINE_SECONDS) -> threading.Timer:
    """Started when the stop begins: if the process is still there `seconds` later, log what is
    still running and exit 0 (a stop, not a failure: systemd asked for it)."""
    timer = threading.Timer(seconds, _exit_now, args=(seconds,))
    timer.name = "stop-deadline"
    timer.daemon = True  # a stop that finishes in time exits without waiting for it
    timer.start()
    return timer


def _exit_now(seconds: float) -> None:
    others = sorted(t.name for t in threading.enumerate() if t is not threading.current_thread())
    log.warning("the stop took more than %g s: exiting with work still under way (threads: %s); "
                "their stacks follow", seconds, ", ".join(others), extra={"threads": others})
    for handler in logging.getLogger().handlers + log.handlers:
        handler.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()
    os._exit(0)
