"""The model learns from verified changes (advisor/model/change_samples.py): a change applied to a dataset
of a named workload, measured before and after by the change tracker, conditions the next
prediction for that workload on this pool like a probe run does.

The change records here are written by hand in the shape GET /v1/changes serves (the lab's
tests/lab/test_changes.py measures real ones); their numbers are synthetic, chosen to contradict
the lab prior so that its effect on the prediction shows.
"""
from __future__ import annotations

import pytest

from advisor.config.settings import Settings
from advisor.model.change_samples import change_observations, workload_of
from advisor.model.features import Observation
from advisor.service.app import create_app
from advisor.store.changes import ChangeStore
from advisor.store.db import connect
from support import RECORDING


def record(old: str = "131072", new: str = "8192", before: float = 400.0, after: float = 200.0, *,
           workload: str | None = "postgres", verdict: str = "worse", notes: list[str] | None = None,
           change_id: int = 7, parameter: str = "recordsize", metric_verdict: str | None = None) -> dict:
    """A done recordsize change of tank/pg, its dataset IOPS `before` -> `after` (synthetic)."""
    effect = {"pool": "tank", "dataset": "tank/pg", "metric": "iops", "of": "dataset", "better_when": "higher",
              "before": {"mean": before, "spread": 0.03, "intervals": 8},
              "after": {"mean": after, "spread": 0.03, "intervals": 8},
              "ratio": after / before, "interval": [0.95 * after / before, 1.05 * after / before],
              "noise_floor": 0.03, "verdict": metric_verdict or verdict}
    return {"id": change_id, "detected_at": "2026-11-28T12:00:00+00:00", "detected_at_epoch": 1795867200.0,
            "changed_between": ["2026-11-28T11:59:45+00:00", "2026-11-28T12:00:00+00:00"],
            "scope": "dataset", "pool": "tank", "dataset": "tank/pg", "parameter": parameter,
            "old": old, "new": new, "source": "local", "followed_recommendation": None, "workload": workload,
            "window_seconds": 120.0, "before_window": None, "after_window": None, "status": "done",
            "verdict": verdict, "reason": "", "notes": notes or [], "effects": [effect]}


def base() -> Observation:
    return Observation(workload="postgres", pattern="random", block_size_bytes=8192, read_fraction=0.7,
                       fsync_every=32, iodepth=1, numjobs=4, working_set_bytes=512 << 20, arc_max_bytes=256 << 20,
                       media="ssd", vdev_type="mirror", top_vdevs=2, vdev_width=2, ashift=12,
                       parameter="recordsize", value="128K", baseline=True,
                       settings={"recordsize": "131072", "compression": "lz4"}, cell="local:tank")


def test_a_change_from_the_default_is_a_run_of_two_points():
    [default, changed] = change_observations([record()], "postgres", base())
    assert (default.value, default.baseline, default.perf) == ("128K", True, 400.0)
    assert (changed.value, changed.baseline, changed.perf) == ("8K", False, 200.0)
    assert default.run == changed.run == "change:7" and default.cell == "local:tank"


def test_a_change_back_to_the_default_reads_the_windows_the_other_way():
    [default, changed] = change_observations([record(old="8K", new="128K", before=200.0, after=400.0)],
                                             "postgres", base())
    assert (default.value, default.perf, changed.value, changed.perf) == ("128K", 400.0, "8K", 200.0)


@pytest.mark.parametrize("edit", [
    {"workload": "mysql"},  # another workload's dataset
    {"workload": None},  # a dataset no workload is named for
    {"old": "16K", "new": "8K"},  # neither side the default: the model's effects are against it
    {"metric_verdict": "not enough load"},  # too little I/O in a window to tell
    {"notes": ["changed within the same collection interval as primarycache: the effect measured is theirs together"]},
    {"parameter": "logbias", "old": "latency", "new": "throughput"},  # not a setting the model predicts
], ids=["other-workload", "unnamed", "no-default", "no-load", "together", "unpredicted"])
def test_changes_the_model_cannot_read_are_left_out(edit):
    assert change_observations([record(**edit)], "postgres", base()) == []


def test_the_followed_recommendation_names_the_workload_when_the_setting_does_not():
    followed = record(workload=None) | {"followed_recommendation": {"workload": "postgres", "rule": "r"}}
    assert workload_of(followed) == "postgres"
    assert workload_of(record(workload=None) | {"followed_recommendation": {"workload": "general"}}) is None


def _recordsize(answer: dict) -> dict:
    return next(r for r in answer["recommendations"] if r["parameter"] == "recordsize" and r["dataset"] == "tank/pg")


async def test_a_verified_change_conditions_the_next_prediction(http_client, tmp_path):
    """PostgreSQL on the lab's SSD mirror: the prior predicts 8K well above 128K. A change of tank/pg
    from 128K to 8K that measured half the IOPS moves the prediction of 8K down, and the answer
    says it read the change."""
    async def ask(state) -> dict:
        client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(state))))
        return _recordsize(await (await client.get("/recommend", params={"workload": "postgres",
                                                                         "dataset": "tank/pg"})).json())

    plain = await ask(tmp_path / "plain")
    learnt_dir = tmp_path / "learnt"
    learnt_dir.mkdir()
    conn = connect(learnt_dir)
    ChangeStore(conn).add(record())
    conn.commit()
    conn.close()
    learnt = await ask(learnt_dir)

    def predicted_8k(rec: dict) -> float:
        return next(e["value"] for e in rec["evidence"] if e["fact"] == "model.recordsize.8K.ratio")

    assert predicted_8k(learnt) < predicted_8k(plain), (predicted_8k(plain), predicted_8k(learnt))
    assert "and 1 verified change on this pool" in learnt["explanation"]
    assert "verified change" not in plain["explanation"]
