"""Whether the state directory can be written, asked once when the service starts.

The service runs without it: the exporter and the advice need no state, stored probe results
are still read. What needs it is queueing a probe (POST /v1/probes answers 503 then), storing
the setting changes it sees (kept in memory then, advisor/changes/tracker.py) and the prober itself, so an unwritable state directory is said once at start, in one line, rather
than found out by the first probe request.
"""
from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from advisor.store.db import DB_FILE


def unwritable_reason(state_dir: str | os.PathLike[str]) -> str | None:
    """Why nothing can be written under `state_dir` (created if missing, as the store does), or None.

    A file is created and removed to find out: permissions alone do not tell (root ignores
    them; a read-only mount or a full disk refuses root too)."""
    directory = Path(state_dir)
    if directory.exists() and not directory.is_dir():
        return f"{directory} is not a directory"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o750)
        fd, probe = tempfile.mkstemp(prefix=".writable-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in {directory}: {exc.strerror or exc}"
    database = directory / DB_FILE
    if database.exists() and not os.access(database, os.R_OK | os.W_OK):
        return f"cannot write {database}: permission denied"
    return None


def report_state_dir(state_dir: str | os.PathLike[str], log: logging.Logger) -> bool:
    """One warning line when the state directory cannot be written; True when it can."""
    reason = unwritable_reason(state_dir)
    if reason is None:
        return True
    log.warning("state_dir is not writable (%s): serving read-only; POST /v1/probes answers 503, "
                "stored probe results are still served", reason)
    return False
