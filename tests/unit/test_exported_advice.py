"""The exporter's advice (advisor/answering/exported_advice.py) is /recommend's answer: asked of the
app's Answerer, on the lab recording of the SSD mirror (OpenZFS 2.3.2, ssd-mirror2x2, idle) with a
probe run stored as the probe store stores it (the lab's postgres cell, tests/support/probes.py)."""
from __future__ import annotations

import asyncio

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.answering.answerer import Answerer
from advisor.answering.exported_advice import Advice
from advisor.config.settings import Settings
from advisor.engine.loader import load_rulebook
from advisor.host.snapshot import collect_from_root
from advisor.service.app import create_app
from support import RECORDING
from support.probes import seed_recordsize_probe

BOOK = load_rulebook()
INFO = "zfs_advisor_recommendation_info"
EFFECT = "zfs_advisor_recommendation_expected_effect_ratio"


@pytest.fixture(scope="module")
def host():
    return asyncio.run(collect_from_root(str(RECORDING), 30.0)).host


def recordsize(recommendations):
    return next(r for r in recommendations if r.parameter == "recordsize")


async def test_a_probed_datasets_exported_advice_is_recommends_answer(http_client, tmp_path):
    seed_recordsize_probe(tmp_path)
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path), model=False,
                                                    workloads={"tank/home": "postgres"})))
    text = await (await client.get("/metrics")).text()
    answer = await (await client.get("/recommend", params={"workload": "postgres", "dataset": "tank/home"})).json()
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    changes = [r for r in answer["recommendations"] if r["status"] == "change"]
    exported = {(s.labels["parameter"], s.labels["scope"], s.labels["current"], s.labels["recommended"],
                 s.labels["rule"], float(s.labels["confidence"])) for s in samples if s.name == INFO}
    assert exported == {(r["parameter"], r["scope"], r["current"] or "", r["recommended"] or "", r["rule"],
                         r["confidence"]) for r in changes}
    [probed] = [r for r in changes if r["parameter"] == "recordsize"]
    assert (probed["source"], probed["recommended"]) == ("probe", "8K")  # the stored run's winner
    effect = {s.labels["bound"]: s.value for s in samples
              if s.name == EFFECT and s.labels["parameter"] == "recordsize" and s.labels["source"] == "probe"}
    expected = probed["expected_effect"]
    assert effect == {"expected": expected["change_ratio"], "low": expected["interval"][0],
                      "high": expected["interval"][1]}


def test_a_probe_stored_after_the_advice_was_computed_changes_it(host, tmp_path):
    """Within one command output (the same generation): the store's state is in the advice's key."""
    advice = Advice(Answerer(BOOK, tmp_path), {"tank/home": "postgres"})
    before = recordsize(r for _, r in advice.for_host(host, 1.0))
    assert before.source != "probe"
    seed_recordsize_probe(tmp_path)
    after = recordsize(r for _, r in advice.for_host(host, 1.0))
    assert (after.source, after.status, after.recommended) == ("probe", "change", "8K")
