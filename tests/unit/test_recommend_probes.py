"""Probe results in the store reach /recommend: `source: probe`, the measured expected effect,
and a rule's value overruled when the repeats tell the candidates apart.

The stored rows carry the IOPS of each repeat and the worst write p99 of a lab run: the prior's
PostgreSQL cell on the SSD mirror (OpenZFS 2.3.2, ssd-mirror2x2, 2026-11-25, run
zfs2.3.2-ssd-mirror2x2-postgres-1-1795589941 of advisor/model/data/prior-zfs2.3.csv),
recordsize 8K/16K/32K/128K, two repeats each; the host is the lab recording of that layout.
"""
from __future__ import annotations

import pytest

from advisor.config.settings import Settings
from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.evidence.parameters import summarize
from advisor.host.snapshot import collect_from_root
from advisor.service.app import create_app
from advisor.store.db import connect
from advisor.store.probe_evidence import stored_evidence
from advisor.store.probes import ProbeStore, ResultRow
from support import RECORDING

# value: (IOPS of each repeat, worst write p99 seconds), the lab run named above
LAB_RUN = {"128K": ((869.4, 853.3), 0.3125), "8K": ((2077.5, 1965.0), 0.0019), "16K": ((1467.4, 1561.0), 0.0098),
           "32K": ((1432.6, 1448.5), 0.0112)}
# an earlier lab run of the same job on a loaded host (docs/probes.md), its repeats put back from
# the mean and the spread it reported (mean -+ spread / 2): 16K's two repeats 76 % apart, 32K's 42 %
NOISY_RUN = {"128K": ((444.4, 447.6), 0.0708), "8K": ((1108.9, 1223.1), 0.0065), "16K": ((612.0, 1356.0), 0.0443),
             "32K": ((704.6, 1081.4), 0.0354)}


def rows(run_id: int, measured: dict[str, tuple[tuple[float, ...], float]]) -> list[ResultRow]:
    out = []
    for value, (repeats, p99) in measured.items():
        for repeat, iops in enumerate(repeats):
            out.append(ResultRow(
                run_id=run_id, parameter="recordsize", value=value, scope="dataset", baseline=value == "128K",
                repeat=repeat, started_at=0.0, iops=iops, read_iops=0.7 * iops,
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
    # the model, conditioned on this probe, decides; the measurement is in the explanation
    assert "8K is predicted +13" in rec["explanation"] and "2,021 IOPS" in rec["explanation"]
    assert "recordsize=8K" in rec["apply"]
    effect = rec["expected_effect"]
    assert effect["metric"] == "iops" and effect["change_ratio"] == pytest.approx(2021.25 / 861.35, rel=0.1)
    low, high = effect["interval"]
    assert 1 < low < effect["change_ratio"] < high
    assert {e["fact"] for e in rec["evidence"]} >= {f"probe.recordsize.{v}.iops" for v in LAB_RUN}


async def test_without_a_store_the_rules_answer_alone(http_client, tmp_path):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "none"))))
    resp = await client.get("/recommend", params={"workload": "postgres", "pool": "tank"})
    assert all(r["source"] in ("rule", "rule+model", "model") for r in (await resp.json())["recommendations"])
    assert not (tmp_path / "none").exists()  # reading advice creates no database


def _probed(host, measured: dict) -> dict:
    """The recordsize item of the PostgreSQL answer for a new dataset on tank, with this probe run."""
    ev = summarize("recordsize", rows(1, measured))
    answer = recommend(host, load_rulebook(), "postgres", pool="tank", measured=lambda pool, w: [ev])
    return next(r for r in answer.recommendations if r.parameter == "recordsize")


async def test_overlapping_repeats_keep_the_current_value_until_measured_better():
    host = (await collect_from_root(str(RECORDING), 30.0)).host
    close = {"128K": ((850, 1150), 0.010), "32K": ((900, 1200), 0.010), "8K": ((950, 1250), 0.009)}
    rec = _probed(host, close)
    assert (rec.source, rec.status, rec.change, rec.current, rec.recommended) == (
        "probe", "undecided", False, "128K", "128K")
    assert rec.apply is None and rec.expected_effect is None
    assert "does not rule out no gain or a loss: keep 128K" in rec.explanation
    assert rec.measure_argv == ["zfs-advisor", "probe", "--pool", "tank", "--workload", "postgres",
                                "--param", "recordsize=128K,8K"]


async def test_one_repeat_each_cannot_decide_and_says_why():
    host = (await collect_from_root(str(RECORDING), 30.0)).host
    single = {value: ((repeats[0],), p99) for value, (repeats, p99) in LAB_RUN.items()}
    rec = _probed(host, single)
    assert (rec.status, rec.recommended, rec.expected_effect) == ("undecided", "128K", None)
    assert "one repeat each: no interval" in rec.explanation


def test_a_noisy_run_tells_apart_less_than_its_ranges_suggest():
    """8K's repeats lie above all of 32K's, but the run's noise, pooled over its candidates,
    leaves the 90 % interval of their ratio across 1; 8K against the default's 128K (2.6x) it
    still tells apart."""
    ev = summarize("recordsize", rows(1, NOISY_RUN))
    eight, thirty_two, default = ev.candidate("8K"), ev.candidate("32K"), ev.candidate("128K")
    assert ev.best == "8K" and eight.iops_min > thirty_two.iops_max
    ratio, (low, high) = ev.ratio(eight, thirty_two)
    assert low < 1 < ratio < high and not ev.separated(eight, thirty_two)
    assert ev.separated(eight, default) and eight.distinguishable


async def test_a_candidate_with_a_much_worse_write_tail_is_not_the_best():
    host = (await collect_from_root(str(RECORDING), 30.0)).host
    tail = {"128K": ((995, 1005), 0.010), "16K": ((1990, 2010), 0.050), "32K": ((1490, 1510), 0.012)}
    rec = _probed(host, tail)
    assert (rec.status, rec.recommended) == ("change", "32K")  # 16K has more IOPS but 5x the default's write p99


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


def _redundant_metadata_item(host, measured: dict[str, tuple[float, ...]]):
    """The redundant_metadata item of the PostgreSQL answer for a new dataset on tank, with a probe
    run of `--param redundant_metadata=all,most` (the default first: the run's baseline)."""
    run = [ResultRow(run_id=1, parameter="redundant_metadata", value=value, scope="dataset", baseline=value == "all",
                     repeat=repeat, started_at=0.0, iops=iops, read_iops=0.7 * iops, write_iops=0.3 * iops,
                     read_bw=0.0, write_bw=0.0, write_p99=0.002, runtime_seconds=30.0, written_bytes=1 << 20,
                     pool={"layout": "2 x mirror-2", "ashift": 12, "media": "ssd"}, job="postgres")
           for value, repeats in measured.items() for repeat, iops in enumerate(repeats)]
    ev = summarize("redundant_metadata", run)
    answer = recommend(host, load_rulebook(), "postgres", pool="tank", measured=lambda pool, w: [ev])
    return next(r for r in answer.recommendations if r.parameter == "redundant_metadata")


async def test_a_probe_of_redundant_metadata_decides_what_the_guide_alone_would_change():
    host = (await collect_from_root(str(RECORDING), 30.0)).host
    # the guide alone: "most" on a mirrored pool, a change with nothing measured
    alone = next(r for r in recommend(host, load_rulebook(), "postgres", pool="tank").recommendations
                 if r.parameter == "redundant_metadata")
    assert (alone.status, alone.recommended, alone.source) == ("change", "most", "rule")
    # measured the same: no gain to show, so the default stays
    same = _redundant_metadata_item(host, {"all": (1000.0, 1010.0), "most": (1005.0, 995.0)})
    assert (same.source, same.change, same.recommended) == ("probe", False, "all")
    assert same.apply is None and same.expected_effect is None
    # measured a gain beyond the repeats' spread: the change, with its measured effect
    better = _redundant_metadata_item(host, {"all": (1000.0, 1010.0), "most": (1200.0, 1210.0)})
    assert (better.source, better.change, better.recommended) == ("probe", True, "most")
    assert better.expected_effect.change_ratio == pytest.approx(1205 / 1005, rel=0.01)
