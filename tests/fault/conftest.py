"""pytest wiring of the fault suite's tally (tests/fault/tally.py): the `tally` fixture,
errors counted per test module, and `--fault-table`, which prints the one table and fails
the run when a number is off (python -m tests.fault)."""
from __future__ import annotations

import pytest

from tests.fault.tally import Tally, count_error, group, table


@pytest.fixture
def tally(request) -> Tally:
    return Tally(group(request.node.nodeid))


def pytest_addoption(parser):
    parser.addoption("--fault-table", action="store_true", help="print the fault suite's table; fail on any bad number")


def pytest_runtest_logreport(report):
    if report.failed and "tests/fault/" in report.nodeid:
        count_error(report.nodeid)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not config.getoption("--fault-table"):
        return
    text, off = table()
    terminalreporter.write_line("")
    for line in text.splitlines():
        terminalreporter.write_line(line)
    for problem in off:
        terminalreporter.write_line(f"OFF: {problem}", red=True)


def pytest_sessionfinish(session, exitstatus):
    if session.config.getoption("--fault-table") and exitstatus == 0:
        _, off = table()
        if off:
            session.exitstatus = 1
