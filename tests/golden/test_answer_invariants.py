"""What every golden answer (every recorded lab host x workload, the model on) must hold, whatever
the rules say: the decision's promises (docs/recommendations.md, "How the answer decides")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.engine.answer import probed
from advisor.probe.candidates import parse_candidate_spec

GOLDEN = Path(__file__).resolve().parent / "recommend"
ANSWERS = sorted(GOLDEN.glob("*/*/*/*.json"))


def _id(path: Path) -> str:
    return "/".join(path.relative_to(GOLDEN).parts)


@pytest.mark.parametrize("path", ANSWERS, ids=_id)
def test_the_answer_keeps_the_decisions_promises(path):
    answer = json.loads(path.read_text())
    for rec in answer["recommendations"]:
        where = f"{rec['rule']} ({rec['parameter']})"
        effect = rec["expected_effect"]
        if rec["status"] == "change":
            # a change never carries its own prediction or measurement of a loss
            assert effect is None or effect["change_ratio"] > 1, where
        else:
            # nothing to apply unless it is a change; keeping means recommending what is there
            assert rec["apply"] is None and not rec["change"], where
        if rec["status"] == "undecided":
            assert rec["recommended"] == rec["current"] and effect is None, where
            # how to decide: a probe, or the answer again under the load that sizes it (a module
            # parameter in the general answer has no workload to probe with)
            measure = rec["measure_argv"]
            if measure is None:  # or no probe can set it (volblocksize): no command it would refuse
                assert answer["workload"] == "general" or not probed(rec["parameter"]), where
            else:
                assert measure[:2] in (["zfs-advisor", "probe"], ["zfs-advisor", "recommend"]), where
                if measure[:2] == ["zfs-advisor", "probe"]:
                    parse_candidate_spec(measure[measure.index("--param") + 1])  # the probe takes it
    target = answer["target"]
    if target.get("new_dataset"):
        creates = {r["apply"] for r in answer["recommendations"]
                   if r["status"] == "change" and r["dataset"] == target["dataset"]}
        assert creates <= {target["create"]}, creates
