"""What every golden answer (every recorded lab host x workload, the model on) must hold, whatever
the rules say: the decision's promises (docs/recommendations.md, "How the answer decides"), among
them that an `undecided` item always says how to decide (tests/support/answer_promises.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.answer_promises import check_promises

GOLDEN = Path(__file__).resolve().parent / "recommend"
ANSWERS = sorted(GOLDEN.glob("*/*/*/*.json"))


def _id(path: Path) -> str:
    return "/".join(path.relative_to(GOLDEN).parts)


@pytest.mark.parametrize("path", ANSWERS, ids=_id)
def test_the_answer_keeps_the_decisions_promises(path):
    check_promises(json.loads(path.read_text()))


def test_the_goldens_hold_undecided_items_of_each_kind():
    """The check above meets what it checks: undecided items with a probe's argv, and with a
    placeholder (the general answer's module parameters); an undecided volblocksize is in no
    recording (tests/unit/test_undecided_measure.py derives one)."""
    undecided = [r for path in ANSWERS for r in json.loads(path.read_text())["recommendations"]
                 if r["status"] == "undecided"]
    assert any(r["measure_argv"] for r in undecided) and any(r["measure_argv"] is None for r in undecided)
