"""The CLI as a user runs it: `python -m advisor ...` in a real subprocess, from this checkout."""
from __future__ import annotations

import os
import subprocess
import sys

from support import REPO


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=60,
    )
