"""The fault suite's tally: every test says how many faults it injected, how many the
service survived and how much data was lost; `--fault-table` prints one table and
fails the run when a number is off (python -m tests.fault).

Without FAULT_SUITE=full (the unit tier), each test runs a quick subset."""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

import pytest

FULL = os.environ.get("FAULT_SUITE") == "full"


@dataclass
class Row:
    cases: int = 0
    errors: int = 0
    injected: int = 0
    survived: int = 0
    lost: int = 0


_ROWS: dict[str, Row] = defaultdict(Row)
# Fewest cases each group must run in a full run (a suite that silently ran nothing passes nothing).
MINIMUM_CASES = {"parsers": 1000, "sources": 500, "snapshots": 10, "hostile_http": 100, "schemathesis": 1000}


def _group(nodeid: str) -> str:
    module = nodeid.split("::")[0].rsplit("/", 1)[-1]
    return module.removeprefix("test_").removesuffix(".py")


class Tally:
    def __init__(self, group: str):
        self.row = _ROWS[group]

    def cases(self, n: int = 1) -> None:
        self.row.cases += n

    def fault(self, survived: bool, lost: int = 0) -> None:
        """One fault injected; whether the service survived it, how many sources it took along."""
        self.row.injected += 1
        self.row.survived += bool(survived)
        self.row.lost += lost


@pytest.fixture
def tally(request) -> Tally:
    return Tally(_group(request.node.nodeid))


def pytest_addoption(parser):
    parser.addoption("--fault-table", action="store_true", help="print the fault suite's table; fail on any bad number")


def pytest_runtest_logreport(report):
    if report.failed and "tests/fault/" in report.nodeid:
        _ROWS[_group(report.nodeid)].errors += 1


def table() -> tuple[str, list[str]]:
    """The table's text, and what is off in it."""
    head = ("test", "cases", "errors", "faults injected", "faults survived", "data lost")
    lines = [head] + [(g, r.cases, r.errors, r.injected, r.survived, r.lost) for g, r in sorted(_ROWS.items())]
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    text = "\n".join("  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(line, widths)))
                     for line in lines)
    off = []
    for group, r in sorted(_ROWS.items()):
        if r.errors:
            off.append(f"{group}: {r.errors} error(s)")
        if r.survived != r.injected:
            off.append(f"{group}: {r.injected - r.survived} fault(s) not survived")
        if r.lost:
            off.append(f"{group}: {r.lost} source(s) of data lost")
        if FULL and r.cases < MINIMUM_CASES.get(group, 1):
            off.append(f"{group}: {r.cases} cases, fewer than {MINIMUM_CASES.get(group, 1)}")
    for group in MINIMUM_CASES:
        if FULL and group not in _ROWS:
            off.append(f"{group}: did not run")
    return text, off


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not config.getoption("--fault-table"):
        return
    text, off = table()
    terminalreporter.write_line("")
    for line in text.splitlines():
        terminalreporter.write_line(line)
    for problem in off:
        terminalreporter.write_line(f"OFF: {problem}", red=True)
    config._fault_table_off = off


def pytest_sessionfinish(session, exitstatus):
    if session.config.getoption("--fault-table") and exitstatus == 0:
        _, off = table()
        if off:
            session.exitstatus = 1
