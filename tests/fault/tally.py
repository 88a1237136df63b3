"""The fault suite's tally, shared by the tests and the conftest hooks (one module, one state):
every test says how many faults it injected, how many the service survived and how much
data was lost; `table()` is the one table `python -m tests.fault` prints."""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

FULL = os.environ.get("FAULT_SUITE") == "full"


@dataclass
class Row:
    cases: int = 0
    errors: int = 0
    injected: int = 0
    survived: int = 0
    lost: int = 0
    silent: int = 0  # facts changed with every source still up


_ROWS: dict[str, Row] = defaultdict(Row)
# Fewest cases each group must run in a full run (a suite that silently ran nothing passes nothing).
MINIMUM_CASES = {"parsers": 1000, "damaged_files": 1500, "sources": 500, "snapshots": 10, "hostile_http": 100,
                 "schemathesis": 1000, "store": 10, "slow_clients": 3, "hostile_bodies": 100,
                 "auth_flood": 100, "connection_burst": 9000, "impossible_values": 66}


class Tally:
    def __init__(self, group: str):
        self.row = _ROWS[group]

    def cases(self, n: int = 1) -> None:
        self.row.cases += n

    def fault(self, survived: bool, lost: int = 0, silent: bool = False) -> None:
        """One fault injected; whether the service survived it, how many sources it took along,
        whether it changed the facts served with every source still saying it is up."""
        self.row.injected += 1
        self.row.survived += bool(survived)
        self.row.lost += lost
        self.row.silent += bool(silent)


def group(nodeid: str) -> str:
    module = nodeid.split("::")[0].rsplit("/", 1)[-1]
    return module.removeprefix("test_").removesuffix(".py")


def count_error(nodeid: str) -> None:
    _ROWS[group(nodeid)].errors += 1


def table() -> tuple[str, list[str]]:
    """The table's text, and what is off in it."""
    head = ("test", "cases", "errors", "faults injected", "faults survived", "data lost", "silent changes")
    lines = [head] + [(g, r.cases, r.errors, r.injected, r.survived, r.lost, r.silent)
                      for g, r in sorted(_ROWS.items())]
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    text = "\n".join("  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(line, widths, strict=True)))
                     for line in lines)
    off = []
    for name, r in sorted(_ROWS.items()):
        if r.errors:
            off.append(f"{name}: {r.errors} error(s)")
        if r.survived != r.injected:
            off.append(f"{name}: {r.injected - r.survived} fault(s) not survived")
        if r.lost:
            off.append(f"{name}: {r.lost} source(s) of data lost")
        if r.silent:
            off.append(f"{name}: {r.silent} fault(s) changed the facts with every source up")
        if FULL and r.cases < MINIMUM_CASES.get(name, 1):
            off.append(f"{name}: {r.cases} cases, fewer than {MINIMUM_CASES.get(name, 1)}")
    for name in MINIMUM_CASES:
        if FULL and name not in _ROWS:
            off.append(f"{name}: did not run")
    return text, off
