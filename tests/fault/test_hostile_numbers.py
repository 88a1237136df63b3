"""Numbers no client should send, over raw sockets to the real app served as `zfs-advisor serve`
serves it: thousands of digits (Python's int() refuses more than 4,300), values past 64 bits,
signs, other digits. Every one is a 400 JSON error whose `valid` is the range, never a 500,
and nothing is logged at ERROR."""
from __future__ import annotations

import json

import pytest

from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import HOSTS
from support.rawhttp import exchange, get, judge, serving

SNAPSHOT = HOSTS / "2.3.2" / "ssd-mirror2x2" / "idle"
NUMBERS = {
    "5,000 digits": "9" * 5000,
    "4,301 digits": "1" * 4301,
    "past 64 bits": str(2**64),
    "zero": "0",
    "above the range": "1001",
    "leading zeros": "0" * 30 + "5",
    "negative": "-5",
    "plus": "+5",
    "superscript two": "%C2%B2",
    "exponent": "1e3",
    "space": "%205",
}
# Where a request carries a whole number, and the range it must be in.
TARGETS = {
    "/v1/probes?limit={}": ["1-1000"],
    "/v1/changes?limit={}": ["1-1000"],
    "/v1/plan?size=4T&seq=200M&disks={}": ["1-256"],
}


@pytest.fixture
async def server(tmp_path):
    settings = Settings(root=str(SNAPSHOT), state_dir=str(tmp_path / "state"), model=False)
    async with serving(create_app(settings)) as served:
        yield served.port, served.errors


@pytest.mark.parametrize("target", list(TARGETS))
async def test_a_number_out_of_bounds_is_a_400_naming_the_range(server, target, tally):
    port, errors = server
    wrong = {}
    for name, number in NUMBERS.items():
        answers = await exchange(port, get(target.format(number)))
        problem = judge(answers)
        if problem is None and (not answers or answers[0][0] != 400
                                or json.loads(answers[0][2])["error"].get("valid") != TARGETS[target]):
            problem = f"answered {answers[0][:1] if answers else None}: {answers[0][2][:200] if answers else b''!r}"
        tally.cases()
        tally.fault(problem is None and not errors.records)
        if problem:
            wrong[name] = problem
    assert not wrong, wrong
    assert not errors.records, [r.getMessage() for r in errors.records][:3]


@pytest.mark.parametrize("target", ["/v1/probes/{}", "/probes/{}"])
async def test_an_id_of_thousands_of_digits_is_a_400(server, target, tally):
    port, errors = server
    answers = await exchange(port, get(target.format("9" * 5000)))
    ok = bool(answers) and answers[0][0] == 400 and not errors.records
    tally.cases()
    tally.fault(ok)
    assert ok, answers[:1]
