"""zfs_advisor_recommendation_info: the advice /recommend gives for each dataset named in the
`workloads` setting, as series; served by the real app on a lab recording (2.3.2 ssd-mirror2x2)."""
from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from advisor.app import create_app
from advisor.settings import Settings, SettingsError
from support import RECORDING

INFO = "zfs_advisor_recommendation_info"


def info_series(text: str) -> list[dict[str, str]]:
    return [s.labels for f in text_string_to_metric_families(text) for s in f.samples if s.name == INFO]


async def test_each_change_recommend_suggests_is_a_series(http_client):
    workloads = {"tank/pg": "postgres", "tank/media": "media", "tank/gone": "postgres"}
    client = await http_client(create_app(Settings(root=str(RECORDING), workloads=workloads)))
    series = info_series(await (await client.get("/metrics")).text())
    for dataset, workload in [("tank/pg", "postgres"), ("tank/media", "media")]:
        answer = await (await client.get("/recommend", params={"workload": workload, "dataset": dataset})).json()
        wanted = {(r["parameter"], r["scope"], r["current"] or "", r["recommended"] or "", r["rule"])
                  for r in answer["recommendations"] if r["status"] == "change"}
        assert wanted, f"the recording should need changes for {workload}"
        mine = [s for s in series if workload in s["workload"].split(",")]
        exported = {(s["parameter"], s["scope"], s["current"], s["recommended"], s["rule"]) for s in mine}
        assert exported == wanted
        assert {s["dataset"] for s in mine if s["scope"] == "dataset"} <= {dataset}
        assert {s["dataset"] for s in mine if s["scope"] != "dataset"} <= {""}
        confidence = {r["rule"]: r["confidence"] for r in answer["recommendations"]}
        assert all(float(s["confidence"]) == confidence[s["rule"]] for s in mine)
    keys = [tuple(v for k, v in sorted(s.items()) if k != "workload") for s in series]
    assert len(keys) == len(set(keys))  # an item two workloads want is one series
    assert [s["workload"] for s in series if s["scope"] == "module"] == ["media,postgres"]
    assert {s["parameter"] for s in series if s["dataset"] == "tank/pg"} >= {"recordsize", "primarycache"}
    assert not [s for s in series if s["dataset"] == "tank/gone"]  # not on this host: no advice, no error


async def test_without_workloads_there_is_no_advice(http_client):
    client = await http_client(create_app(Settings(root=str(RECORDING))))
    assert info_series(await (await client.get("/metrics")).text()) == []


def test_an_unknown_workload_stops_start_up_naming_the_valid_ones():
    with pytest.raises(SettingsError, match=r"'postgress' is not a workload; valid: .*postgres"):
        create_app(Settings(root=str(RECORDING), workloads={"tank/pg": "postgress"}))


def test_a_bad_dataset_name_is_a_settings_error():
    with pytest.raises(ValidationError, match="workloads"):
        Settings(workloads={"tank/../x; rm": "postgres"})
