"""/recommend with workload=auto (or a dataset and no workload) and zfs_advisor_dataset_workload_info,
through the real app, on the lab recording of OpenZFS 2.3.2 on ssd-mirror2x2 under load.

DERIVED: tank/pg's objset counters in the collections fed to the recogniser are those the lab
recorded for tank/rec while a job ran (tests/fixtures/recognition/): the postgres data job's, or
the file copy's. The rest of each collection is the recorded host as it is.
"""
from __future__ import annotations

import asyncio
import re
import time

from advisor.api.appkeys import RECOGNISER
from advisor.config.settings import Settings
from advisor.host.snapshot import collect_from_root
from advisor.hostmodel.facts import Host, KStat
from advisor.recognise.recorded import read_job
from advisor.recognise.traits import COUNTER_NAMES
from advisor.service.app import create_app
from support import FIXTURES, HOSTS

LOAD = HOSTS / "2.3.2" / "ssd-mirror2x2" / "load"
RECORDED = FIXTURES / "recognition"


def with_counters(host: Host, counters: tuple[int, ...]) -> Host:
    h = host.model_copy(deep=True)
    ds = h.dataset("tank/pg")
    ds.io = KStat(values={**ds.io.values, **dict(zip(COUNTER_NAMES, counters, strict=True))})
    return h


async def app_seeing(tmp_path, http_client, job: str):
    app = create_app(Settings(root=str(LOAD), state_dir=str(tmp_path / "state"), commands_interval_seconds=3600,
                              model=False))
    client = await http_client(app)
    host = (await collect_from_root(LOAD)).host
    start = time.monotonic() + 3600  # after anything the app's own refresh observed
    for i, sample in enumerate(read_job(RECORDED / job)):
        await asyncio.to_thread(app[RECOGNISER].observe, with_counters(host, sample.datasets["tank/rec"]),
                                start + 5 * i)
    return app, client


async def test_a_recognised_dataset_gets_its_workloads_advice_and_says_so(http_client, tmp_path):
    _, client = await app_seeing(tmp_path, http_client, "postgres.data")
    for query in ("dataset=tank/pg", "workload=auto&dataset=tank/pg"):
        resp = await client.get(f"/recommend?{query}")
        body = await resp.json()
        assert resp.status == 200, body
        assert body["workload"] == "postgres" and body["parameters"]["role"] == "data"
        assert body["target"] == {**body["target"], "pool": "tank", "dataset": "tank/pg"}
        [seen] = body["recognised"]
        assert (seen["dataset"], seen["workload"], seen["role"], seen["used"]) == ("tank/pg", "postgres", "data", True)
        assert seen["confidence"] >= 0.5 and seen["observed"]["mean_read_bytes"] == 8192
        assert any(r["dataset"] == "tank/pg" and r["parameter"] == "recordsize" for r in body["recommendations"])
    text = await (await client.get("/recommend?dataset=tank/pg&format=text")).text()
    assert "dataset tank/pg: recognised as postgres (data, confidence" in text

    # no dataset: the pools' advice, and each recognised dataset's own
    pools = await (await client.get("/recommend?workload=auto")).json()
    general = await (await client.get("/recommend")).json()
    assert pools["workload"] == "general"
    seen = {s["dataset"]: s for s in pools["recognised"]}
    assert (seen["tank/pg"]["workload"], seen["tank/pg"]["used"]) == ("postgres", True)
    own = [r for r in pools["recommendations"] if r["dataset"] == "tank/pg"]
    assert own and all(r["scope"] == "dataset" for r in own)
    assert len(pools["recommendations"]) == len(general["recommendations"]) + len(own)
    assert sum(pools["summary"].values()) == len(pools["recommendations"])

    metrics = await (await client.get("/metrics")).text()
    # 0.9, not 1.0: InnoDB's data directory with its redo log (mysql/data+log, rules/workloads/mysql.yaml
    # shared_io) also writes 8 KiB on average, and fits this window's 8 KiB writes at 0.135 (its 16 KiB reads)
    assert 'zfs_advisor_dataset_workload_info{confidence="0.9",dataset="tank/pg",role="data",workload="postgres"} 1.0' \
        in metrics.splitlines(), [m for m in metrics.splitlines() if "workload_info" in m]

    # the page: the overview lists tank/pg with its recognised workload, the pool page carries its advice
    overview = await (await client.get("/")).text()
    assert re.search(r">tank/pg</a></td><td>postgres \(data\), recognised from its I/O, confidence 0\.[5-9]\d</td>", overview)
    pool_page = await (await client.get("/pool/tank")).text()
    assert re.search(r"tank/pg: workload postgres \(data\), recognised from its I/O, confidence 0\.[5-9]\d</h3>", pool_page)


async def test_an_unrecognised_dataset_gets_the_pool_level_advice(http_client, tmp_path):
    _, client = await app_seeing(tmp_path, http_client, "file-copy")
    body = await (await client.get("/recommend?dataset=tank/pg")).json()
    assert body["workload"] == "general" and body["target"]["pool"] == "tank" and body["target"]["dataset"] is None
    [seen] = body["recognised"]
    assert seen["workload"] == "unknown" and seen["used"] is False and seen["role"] is None
    assert "fits no profile" in seen["reason"] or "alike" in seen["reason"]
    assert not [r for r in body["recommendations"] if r.get("dataset")]
    metrics = await (await client.get("/metrics")).text()
    assert 'dataset="tank/pg",role="",workload="unknown"' in metrics
    overview = await (await client.get("/")).text()
    assert "recognised from its I/O" not in overview and "tank/pg" not in overview


async def test_bad_input_is_a_4xx_naming_the_choices(http_client, tmp_path):
    _, client = await app_seeing(tmp_path, http_client, "postgres.data")
    resp = await client.get("/recommend?workload=databse")
    body = await resp.json()
    assert resp.status == 404 and "auto" in body["error"]["valid"] and "postgres" in body["error"]["valid"]
    resp = await client.get("/recommend?workload=auto&dataset=tank/pg&page_size=16K")
    body = await resp.json()
    assert resp.status == 400 and "workload=auto" in body["error"]["reason"] and "postgres" in body["error"]["valid"]
    resp = await client.get("/recommend?workload=auto&dataset=tank/nope")
    body = await resp.json()
    assert resp.status == 404 and "tank/pg" in body["error"]["valid"]
    resp = await client.get("/recommend?workload=auto&dataset=-bad")
    assert resp.status == 400 and "invalid dataset name" in (await resp.json())["error"]["reason"]
    # never observed: unknown, pool-level advice
    body = await (await client.get("/recommend?dataset=tank/home")).json()
    assert body["workload"] == "general" and body["recognised"][0]["workload"] == "unknown"
