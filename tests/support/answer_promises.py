"""The decision's promises (docs/recommendations.md, "How the answer decides") checked on one
/recommend answer as JSON: what every answer must hold, whatever the rules say. The golden tier
checks every golden answer; unit tests check answers of hosts derived from the recordings."""
from __future__ import annotations

import shlex
from typing import Any

from advisor.probe.candidates import parse_candidate_spec

# The words a command holds where the answer does not know the value (advisor/engine/evaluator.py)
PLACEHOLDERS = {"WORKLOAD", "POOL"}


def check_promises(answer: dict[str, Any]) -> None:
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
            check_how_to_decide(rec, where)
        else:
            assert rec.get("measure_steps") is None, where
    target = answer["target"]
    if target.get("new_dataset"):
        creates = {r["apply"] for r in answer["recommendations"]
                   if r["status"] == "change" and r["dataset"] == target["dataset"]}
        assert creates <= {target["create"]}, creates


def check_how_to_decide(rec: dict[str, Any], where: str) -> None:
    """An undecided item always says how to decide: a probe, the answer again under the load that
    sizes it, or the steps of a measurement no probe can make (a zvol's volblocksize); as text
    with a placeholder where the answer does not know a value (no workload asked for, no pool)."""
    measure, argv, steps = rec["measure"], rec["measure_argv"], rec.get("measure_steps")
    assert measure, f"{where}: undecided, and nothing says how to decide"
    if steps is not None:
        assert argv is None and measure == " && ".join(map(shlex.join, steps)), where
        check_test_zvol_steps(steps, rec["dataset"], where)
    elif argv is not None:
        assert measure == shlex.join(argv), where
        assert argv[:2] in (["zfs-advisor", "probe"], ["zfs-advisor", "recommend"]), where
        if argv[:2] == ["zfs-advisor", "probe"]:
            parse_candidate_spec(argv[argv.index("--param") + 1])  # the probe takes it
    else:
        assert PLACEHOLDERS & set(shlex.split(measure)), f"{where}: no argv, and no placeholder why: {measure}"


def check_test_zvol_steps(steps: list[list[str]], dataset: str | None, where: str) -> None:
    """Steps that make test zvols, run fio on them and destroy them: each a new name, never the
    dataset advised on; only they are destroyed, each by name alone, after everything else; fio
    writes to their devices and nowhere else."""
    created = [s[-1] for s in steps if s[:2] == ["zfs", "create"]]
    destroys = [s for s in steps if s[:2] == ["zfs", "destroy"]]
    assert created and dataset not in created and len(set(created)) == len(created), where
    assert all(s[:3] == ["zfs", "create", "-V"] for s in steps if s[:2] == ["zfs", "create"]), where  # reserved, never sparse
    assert destroys == [["zfs", "destroy", name] for name in created] == steps[-len(created):], where
    assert steps[:len(created)] == [s for s in steps if s[:2] == ["zfs", "create"]], where
    others = steps[len(created):-len(created)]
    assert [s[0] for s in others] == ["udevadm", "fio"], where
    fio = others[1]
    targets = {a.removeprefix("--filename=") for a in fio if a.startswith("--filename=")}
    assert targets == {f"/dev/zvol/{name}" for name in created}, where
    assert not [a for a in fio if a.startswith(("--directory=", "--filename_format=", "--opendir="))], where
