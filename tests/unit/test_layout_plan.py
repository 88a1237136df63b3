"""The planner's predictions (hand-checked), `zfs-advisor plan` and GET /v1/plan through the real app."""
from __future__ import annotations

import json

import pytest

from advisor.cli import main
from advisor.config.settings import Settings
from advisor.layout.layouts import Candidate, candidates
from advisor.layout.planned_disks import PlanInputError, given_disks, measured_disks
from advisor.layout.predict import DiskSpec, plan, predict
from advisor.layout.space import Vdev
from advisor.probe.pooldesc import describe_pool
from advisor.service.app import create_app
from advisor.store.db import connect
from advisor.store.probes import ProbeStore
from support import HOSTS
from support.recorded import recorded_host

K = 1024
HDD = DiskSpec(count=6, size_bytes=4 * 10**12, seq_read_bytes_per_second=200e6, seq_write_bytes_per_second=200e6,
               random_read_iops=150, random_write_iops=150, media="hdd")


def _one(vdevs, recordsize=128 * K, block=4 * K, disks=HDD):
    return predict(Candidate(tuple(vdevs)), disks, recordsize, block)


def test_six_disks_give_every_layout_that_uses_them_all():
    names = [c.name for c in candidates(6)]
    assert names == ["stripe of 6", "3 x 2-way mirror", "2 x 3-way mirror", "2 x raidz1 of 3", "1 x raidz1 of 6",
                     "1 x raidz2 of 6", "1 x raidz3 of 6", "draid1:4d:6c:1s", "draid2:3d:6c:1s"]
    assert [c.name for c in candidates(1)] == ["stripe of 1"]


def test_raidz2_of_six_by_hand():
    p = _one([Vdev("raidz", 6, 2)])
    assert p.seq_read_bytes_per_second == 4 * 200e6  # four data disks
    assert p.seq_write_bytes_per_second == pytest.approx(6 * 200e6 * 32 / 48)  # 128K costs 48 sectors: 4 disks
    assert p.random_read_iops == 6 * 150  # a 4K block is one data column: every disk serves its own reads
    assert p.random_write_iops == 6 * 150 / 3  # a 4K write: one data + two parity sectors
    assert (p.fault_tolerance_any, p.fault_tolerance_best) == (2, 2)
    wide = _one([Vdev("raidz", 6, 2)], block=128 * K)
    # a block that spans the stripe: about one disk's IOPS per vdev (Ahrens)
    assert wide.random_read_iops == pytest.approx(6 / 4 * 150) and wide.random_write_iops == 150


def test_raidz1_of_four_pays_its_padding_on_writes():
    p = _one([Vdev("raidz", 4, 1)])
    assert p.seq_write_bytes_per_second == pytest.approx(4 * 200e6 * 32 / 44)  # 27 % parity + padding, not 25 %
    assert p.seq_read_bytes_per_second == 3 * 200e6


def test_mirrors_read_from_every_side_and_write_every_copy():
    p = _one([Vdev("mirror", 2)] * 3)
    assert p.seq_read_bytes_per_second == 6 * 200e6 and p.seq_write_bytes_per_second == 3 * 200e6
    assert p.random_read_iops == 6 * 150 and p.random_write_iops == 3 * 150
    assert (p.fault_tolerance_any, p.fault_tolerance_best) == (1, 3)


def test_draid_writes_whole_rows_and_keeps_a_spare_idle():
    p = _one([Vdev("draid", 6, 2, ndata=3, nspares=1)])
    assert p.random_write_iops == 5 * 150 / 5  # every 4K write fills a row of 3 data + 2 parity
    assert p.random_read_iops == 5 * 150 and p.seq_read_bytes_per_second == pytest.approx(5 * 3 / 5 * 200e6)
    assert p.distributed_spares == 1 and p.fault_tolerance_any == 2


def test_without_iops_no_iops_are_predicted():
    disks = HDD.model_copy(update={"random_read_iops": None, "random_write_iops": None})
    assert all(p.random_read_iops is None and p.random_write_iops is None for p in plan(disks).layouts)


def test_the_plan_puts_the_most_fault_tolerant_first_then_the_most_space():
    order = [(p.fault_tolerance_any, p.data_bytes) for p in plan(HDD).layouts]
    assert order == sorted(order, key=lambda t: (-t[0], -t[1]))


@pytest.mark.parametrize("kwargs, reason", [
    ({"disks": "0"}, "disks must be from 1 to 256"),
    ({"disks": "six"}, "disks: not a whole number"),
    ({"size": "4X"}, "size: not an amount"),
    ({"size": "1M"}, "less than 64 MiB"),
    ({"seq": "-5"}, "seq: not an amount"),
    ({"seq": "2E"}, "seq: not an amount"),
    ({"iops": "0"}, "iops must be more than 0"),
    ({"media": "tape"}, "unknown media"),
    ({"ashift": "13.5"}, "unknown ashift"),
    ({"size": ""}, "missing size"),
])
def test_bad_input_says_why_and_what_is_valid(kwargs, reason):
    args = {"disks": "6", "size": "4T", "seq": "200M", "iops": "150", **kwargs}
    with pytest.raises(PlanInputError) as caught:
        given_disks(**args)
    assert reason in caught.value.reason and caught.value.valid


def test_datasheet_units_are_powers_of_1000_and_ib_units_of_1024():
    disks = given_disks("4", "4T", "200MB/s", "150")
    assert disks.size_bytes == 4 * 10**12 and disks.seq_read_bytes_per_second == 200e6
    assert given_disks("4", "3.5TiB", "200M").size_bytes == int(3.5 * 2**40)


def test_cli_prints_the_table(capsys):
    assert main(["plan", "--disks", "6", "--size", "4T", "--seq", "200M", "--iops", "150", "--media", "hdd"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("6 x 4 TB hdd disks, 200 / 200 MB/s")
    row = next(line for line in out.splitlines() if line.startswith("1 x raidz2 of 6"))
    # random reads: every disk over the pool, two of the six for a new pool's data (docs/planner.md)
    assert row.split()[5:12] == ["14.4T", "14.4T", "800", "800", "900", "(300)", "300"]
    assert "rnd rd IOPS (n): of data in one metaslab of each vdev" in out
    raidz3 = next(line for line in out.splitlines() if line.startswith("1 x raidz3 of 6"))
    assert raidz3.split()[9:11] == ["450", "225"]  # three of the six disks hold 4K records, in every metaslab


def test_cli_json_and_a_bad_flag(capsys):
    assert main(["plan", "--disks", "4", "--size", "2T", "--seq", "150M", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["disks"]["count"] == 4 and body["layouts"][0]["layout"] == "1 x raidz2 of 4"
    assert main(["plan", "--disks", "4", "--size", "2T", "--seq", "150M", "--recordsize", "100K"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "recordsize must be a power of 2" in err and "valid: 512, 4K" in err


def _store_efficiency(state_dir, layout="hdd-raidz2x6", rate=148e6, iops=None):
    """A `probe --efficiency` report of a recorded lab pool (its descriptor as the probe builds it)."""
    host = recorded_host(next(HOSTS.glob(f"2.3.*/{layout}/idle")))
    descriptor = describe_pool(host.pools[0], host.disks)
    report = {"pool": descriptor, "raw_read_bytes_per_second": {d["name"]: rate for d in descriptor["disks"]},
              "results": [], "disks": {}}
    if iops:
        report["raw_random_iops"] = {"4k": {d["name"]: iops + i for i, d in enumerate(descriptor["disks"])}}
    conn = connect(state_dir)
    ProbeStore(conn).add_efficiency("tank", report)
    conn.commit()
    conn.close()
    return descriptor


def test_cli_takes_the_disks_of_a_pool_from_its_efficiency_run(tmp_path, capsys):
    descriptor = _store_efficiency(tmp_path)
    assert main(["plan", "--pool", "tank", "--state-dir", str(tmp_path), "--iops", "150", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["disks"]["count"] == 6 == len(descriptor["disks"])
    assert body["disks"]["size_bytes"] == 2 * 1024**3 and body["disks"]["seq_read_bytes_per_second"] == 148e6
    assert body["disks"]["ashift"] == 12 and "--efficiency" in body["disks"]["source"]
    raidz2 = next(p for p in body["layouts"] if p["layout"] == "1 x raidz2 of 6")
    assert raidz2["usable_bytes"] == 7966982144  # what the recorded pool itself shows


def test_cli_takes_the_disks_iops_from_the_runs_raw_random_reads(tmp_path, capsys):
    _store_efficiency(tmp_path, iops=148.0)
    assert main(["plan", "--pool", "tank", "--state-dir", str(tmp_path), "--json"]) == 0
    disks = json.loads(capsys.readouterr().out)["disks"]
    # the slowest disk's, for reads and (not measurable read-only) writes
    assert disks["random_read_iops"] == 148.0 == disks["random_write_iops"] and "random 4K" in disks["source"]
    assert main(["plan", "--pool", "tank", "--state-dir", str(tmp_path), "--iops", "90", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["disks"]["random_read_iops"] == 90  # given beats measured


def test_cli_names_the_missing_efficiency_run(tmp_path, capsys):
    assert main(["plan", "--pool", "tank", "--state-dir", str(tmp_path)]) == 2
    assert "zfs-advisor probe --pool tank --efficiency" in capsys.readouterr().err


def test_measured_disks_refuse_a_report_without_rates():
    with pytest.raises(PlanInputError):
        measured_disks({"pool": {"disks": []}, "raw_read_bytes_per_second": {}}, "tank")


@pytest.fixture
async def client(http_client, tmp_path):
    return await http_client(create_app(Settings(root=str(tmp_path), model=False)))


async def test_api_plan(client):
    resp = await client.get("/v1/plan", params={"disks": "6", "size": "4T", "seq": "200M", "iops": "150"})
    assert resp.status == 200 and resp.content_type == "application/json"
    body = await resp.json()
    assert body["recordsize_bytes"] == 128 * K and body["random_block_bytes"] == 4 * K
    raidz2 = next(p for p in body["layouts"] if p["layout"] == "1 x raidz2 of 6")
    assert raidz2["seq_read_bytes_per_second"] == 800e6 and raidz2["random_write_iops"] == 300
    assert raidz2["zpool_create"] == "zpool create tank raidz2 D1 D2 D3 D4 D5 D6"
    assert any("delphix.com" in r for r in body["references"])


@pytest.mark.parametrize("params, reason", [
    ({"disks": "6", "size": "4T"}, "missing seq"),
    ({"disks": "6", "size": "4T", "seq": "200M", "media": "floppy"}, "unknown media"),
    ({"disks": "6", "size": "4T", "seq": "200M", "colour": "red"}, "unknown query parameter"),
    ({"disks": "999", "size": "4T", "seq": "200M"}, "disks must be from 1 to 256"),
    ({"disks": "6", "size": "4T", "seq": "200M", "block": "3K"}, "block must be a power of 2"),
])
async def test_api_plan_bad_input_is_a_400_with_the_choices(client, params, reason):
    resp = await client.get("/v1/plan", params=params)
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert reason in error["reason"] and error["valid"]


async def test_api_plan_refuses_a_repeated_parameter(client):
    resp = await client.get("/v1/plan?disks=6&disks=7&size=4T&seq=200M")
    assert resp.status == 400


async def test_openapi_documents_the_plan(client):
    doc = await (await client.get("/openapi.json")).json()
    get = doc["paths"]["/v1/plan"]["get"]
    assert [p["name"] for p in get["parameters"]][:3] == ["disks", "size", "seq"]
    assert "LayoutPrediction" in doc["components"]["schemas"]
