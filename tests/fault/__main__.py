"""The fault suite, one command: `python -m tests.fault` (from the repository root).

Runs every test in tests/fault at full size (FAULT_SUITE=full: every recorded lab
snapshot with each source broken alone, more hypothesis examples and random hostile
requests, schemathesis), prints one table (test, cases, errors, faults injected, faults
survived, data lost, silent changes: facts changed with every source up) and exits
non-zero when any number is off. `--quick` runs the subset the unit tier runs. Extra
arguments go to pytest (e.g. `-k parsers`).
"""
from __future__ import annotations

import os
import sys
import time

import pytest


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    args = [a for a in argv if a != "--quick"]
    if not quick:
        os.environ["FAULT_SUITE"] = "full"
    started = time.monotonic()
    code = pytest.main(["-p", "no:cacheprovider", "-q", "--fault-table", "tests/fault", *args])
    print(f"fault suite ({'quick' if quick else 'full'}): {time.monotonic() - started:.0f} s, "
          f"{'passed' if code == 0 else 'FAILED'}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
