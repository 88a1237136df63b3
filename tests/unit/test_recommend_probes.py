"""Probe results in the store reach /recommend: `source: probe`, the measured expected effect,
and a rule's value overruled when the repeats tell the candidates apart.

The stored rows carry the IOPS and write p99 of the lab run in docs/probes.md (OpenZFS 2.3.2,
ssd-mirror2x2, postgres data job, recordsize 8K/16K/32K/128K, two repeats each), spread around
their means by the dispersion that run reported; the host is the lab recording of that layout.
"""
from __future__ import annotations

import pytest
from support import RECORDING

from advisor.app import create_app
from advisor.engine.measured import apply_measurements
from advisor.engine.service import recommend
from advisor.engine.loader import load_rulebook
from advisor.host.snapshot import collect_from_root
from advisor.probe.evidence import stored_evidence, summarize
from advisor.settings import Settings
from advisor.store.db import connect
from advisor.store.probes import ProbeStore, ResultRow

# value: (mean IOPS, dispersion (max-min)/mean, write p99 seconds), lab run of docs/probes.md
LAB_RUN = {"128K": (446, 0.007, 0.0708), "8K": (1166, 0.098, 0.0065), "16K": (984, 0.756, 0.0443),
           "32K": (893, 0.422, 0.0354)}


def rows(run_id: int, measured: dict[str, tuple[float, float, float]]) -> list[ResultRow]:
    out = []
    for value, (iops, spread, p99) in measured.items():
        for repeat, sign in enumerate((-1, 1)):
            out.append(ResultRow(
                run_id=run_id, parameter="recordsize", value=value, scope="dataset", baseline=value == "128K",
                repeat=repeat, started_at=0.0, iops=iops * (1 + sign * spread / 2), read_iops=0.7 * iops,
                write_iops=0.3 * iops, read_bw=0.0, write_bw=0.0, write_p99=p99, runtime_seconds=30.0,
                written_bytes=1 << 20, pool={"layout": "2 x mirror-2", "ashift": 12, "media": "ssd"}, job="postgres"))
    return out


@pytest.fixture
def state_dir(tmp_path):
    store = ProbeStore(connect(tmp_path))
    run = store.start_run("tank", "postgres", "data", {}, [], None)
    for row in rows(run, LAB_RUN):
        store.add_result(row)
    store.end_run(run, "completed")
    store.conn.close()
    return tmp_path


async def test_recommend_advises_from_the_measurement_and_says_so(http_client, state_dir):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(state_dir))))
    resp = await client.get("/recommend", params={"workload": "postgres", "pool": "tank"})
    assert resp.status == 200
    rec = next(r for r in (await resp.json())["recommendations"] if r["parameter"] == "recordsize")
    assert rec["source"] == "probe"
    assert rec["current"] == "128K" and rec["recommended"] == "8K" and rec["change"] is True
    assert "overrules the rule" in rec["explanation"] and "1,166 IOPS" in rec["explanation"]
    assert "recordsize=8K" in rec["apply"]
    effect = rec["expected_effect"]
    assert effect["metric"] == "iops" and effect["change_ratio"] == pytest.approx(1166 / 446, rel=1e-3)
    low, high = effect["interval"]
    assert 1 < low < effect["change_ratio"] < high
    assert {e["fact"] for e in rec["evidence"]} >= {f"probe.recordsize.{v}.iops" for v in LAB_RUN}


async def test_without_a_store_the_rules_answer_alone(http_client, tmp_path):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "none"))))
    resp = await client.get("/recommend", params={"workload": "postgres", "pool": "tank"})
    assert all(r["source"] in ("rule", "rule+model", "model") for r in (await resp.json())["recommendations"])
    assert not (tmp_path / "none").exists()  # reading advice creates no database


async def test_overlapping_repeats_leave_the_rules_value_standing():
    host = (await collect_from_root(str(RECORDING), 30.0)).host
    book = load_rulebook()
    plain = recommend(host, book, "postgres", pool="tank")
    rule = next(r for r in plain.recommendations if r.parameter == "recordsize")
    close = {"128K": (1000, 0.30, 0.010), "32K": (1050, 0.30, 0.010), "8K": (1100, 0.30, 0.009)}  # overlapping repeats
    ev = summarize("recordsize", rows(1, close))
    rec = next(r for r in apply_measurements(plain.recommendations, {"tank": [ev]}) if r.parameter == "recordsize")
    assert rec.source == "probe" and rec.recommended == rule.recommended and rec.change == rule.change
    assert "could not separate" in rec.explanation
    assert rec.expected_effect is not None and rec.expected_effect.interval[0] < 1 < rec.expected_effect.interval[1]


async def test_a_candidate_with_a_much_worse_write_tail_is_not_the_best():
    host = (await collect_from_root(str(RECORDING), 30.0)).host
    plain = recommend(host, load_rulebook(), "postgres", pool="tank")
    tail = {"128K": (1000, 0.01, 0.010), "16K": (2000, 0.01, 0.050), "32K": (1500, 0.01, 0.012)}
    ev = summarize("recordsize", rows(1, tail))
    rec = next(r for r in apply_measurements(plain.recommendations, {"tank": [ev]}) if r.parameter == "recordsize")
    assert rec.recommended == "32K"  # 16K has more IOPS but 5x the default's write p99


def test_stored_evidence_reads_what_the_runner_stored(state_dir):
    [ev] = stored_evidence(state_dir)("tank", "postgres")
    assert ev.best == "8K" and [c.value for c in ev.candidates] == ["8K", "16K", "32K", "128K"]
    assert stored_evidence(state_dir)("tank", "mysql") == []


async def test_v1_probes_lists_runs_and_shows_one_with_its_evidence(http_client, state_dir):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(state_dir))))
    runs = (await (await client.get("/v1/probes", params={"pool": "tank"})).json())["runs"]
    assert [(r["pool"], r["workload"], r["status"]) for r in runs] == [("tank", "postgres", "completed")]
    one = await (await client.get(f"/v1/probes/{runs[0]['id']}")).json()
    assert len(one["results"]) == 2 * len(LAB_RUN)
    assert [e["best"] for e in one["evidence"]] == ["8K"]
    assert (await (await client.get("/v1/probes", params={"workload": "mysql"})).json())["runs"] == []


@pytest.mark.parametrize("path, params, status", [
    ("/v1/probes/999", {}, 404),
    ("/v1/probes/abc", {}, 400),
    ("/v1/probes/99999999999999999999999", {}, 400),
    ("/v1/probes/%C2%B2", {}, 400),  # "²": a Unicode digit int() refuses (found by schemathesis)
    ("/v1/probes", {"limit": "\u00b2"}, 400),
    ("/v1/probes", {"pool": "../etc"}, 400),
    ("/v1/probes", {"pool": "tank\n"}, 400),
    ("/v1/probes", {"workload": "nosuch"}, 404),
    ("/v1/probes", {"limit": "0"}, 400),
    ("/v1/probes", {"limit": "-5"}, 400),
    ("/v1/probes", {"limit": "x" * 300}, 400),
])
async def test_v1_probes_bad_requests_are_json_errors(http_client, state_dir, path, params, status):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(state_dir))))
    resp = await client.get(path, params=params)
    assert resp.status == status
    assert (await resp.json())["error"]["status"] == status


async def test_v1_probes_without_a_database_is_empty_and_creates_none(http_client, tmp_path):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "none"))))
    assert (await (await client.get("/v1/probes")).json()) == {"runs": []}
    assert (await client.get("/v1/probes/1")).status == 404
    assert not (tmp_path / "none").exists()
