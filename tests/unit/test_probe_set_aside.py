"""A probe run the host's CPU bound is no evidence about the storage: it moves no answer, feeds
the model nothing, and the answer and GET /v1/probes/{id} say it was set aside and why.

The figures are the lab's (docs/probes.md, "What set a run's pace"): PostgreSQL's probe on an SSD
mirror measured 8K at 1,846 IOPS and 128K at 694 on an idle host, and 128K at 895 and 8K at 436 while
another VM shared the host's two cores; the repeats here are put back around those means. The host
is the lab recording of that layout; the store is a real SQLite store written as the runner writes it.
"""
from __future__ import annotations

import pytest

from advisor.config.settings import Settings
from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.host.snapshot import collect_from_root
from advisor.service.app import create_app
from advisor.store.db import connect
from advisor.store.probe_evidence import evidence, stored_evidence
from advisor.store.probes import ProbeStore, ResultRow
from support import RECORDING

BOOK = load_rulebook()
IDLE_HOST = {"8K": (1846.0, 1810.0), "128K": (694.0, 700.0)}
BUSY_HOST = {"8K": (436.0, 441.0), "128K": (895.0, 890.0)}
CPU_REASON = ("the host's CPU set the pace, not the storage: CPU 99% busy (62% other programs' work), while the "
              "busiest disk, sdb, was busy 34% of the 30 s")
MIRROR2X2 = {"pool": "tank", "layout": "2 x mirror of 2", "ashift": 12, "media": "ssd",
             "vdevs": [{"type": "mirror", "width": 2, "ashift": 12, "nparity": None, "disks": ["sdb", "sdc"]},
                       {"type": "mirror", "width": 2, "ashift": 12, "nparity": None, "disks": ["sdd", "sde"]}]}


def store_run(state_dir, measured: dict[str, tuple[float, ...]], bound: str, job: str = "postgres") -> int:
    store = ProbeStore(connect(state_dir))
    run = store.start_run("tank", "postgres", "data", {}, [], MIRROR2X2)
    for value, repeats in measured.items():
        for repeat, iops in enumerate(repeats, 1):
            store.add_result(ResultRow(
                run_id=run, parameter="recordsize", value=value, scope="dataset", baseline=value == "128K",
                repeat=repeat, started_at=0.0, iops=iops, read_iops=0.7 * iops, write_iops=0.3 * iops, read_bw=0.0,
                write_bw=0.0, write_p99=0.002, runtime_seconds=30.0, written_bytes=1 << 20, pool=MIRROR2X2, job=job,
                bound=bound, bound_reason=CPU_REASON if bound == "cpu" else "the storage set the pace",
                load={"seconds": 30.0}))
    store.end_run(run, "completed")
    store.conn.close()
    return run


@pytest.fixture(scope="module")
def host():
    import asyncio

    return asyncio.run(collect_from_root(str(RECORDING), 30.0)).host


def recordsize_item(host, state_dir=None):
    measured = stored_evidence(state_dir) if state_dir is not None else None
    answer = recommend(host, BOOK, "postgres", pool="tank", measured=measured)
    return next(r for r in answer.recommendations if r.parameter == "recordsize")


def decision(rec) -> tuple:
    return rec.status, rec.recommended, rec.source, rec.expected_effect


def test_a_storage_bound_run_moves_the_answer(host, tmp_path):
    store_run(tmp_path, IDLE_HOST, "storage")
    rec = recordsize_item(host, tmp_path)
    assert (rec.status, rec.recommended, rec.source) == ("change", "8K", "probe")
    assert "set aside" not in rec.explanation


def test_a_cpu_bound_run_moves_nothing_and_the_answer_says_why(host, tmp_path):
    run = store_run(tmp_path, BUSY_HOST, "cpu")
    rules_alone = recordsize_item(host)
    rec = recordsize_item(host, tmp_path)
    assert decision(rec) == decision(rules_alone)
    assert rec.explanation.startswith(rules_alone.explanation)
    assert (f"Probe run {run} on this pool was set aside (4 repeats CPU-bound): {CPU_REASON}. It is no evidence "
            "about the storage and moves nothing here") in rec.explanation
    [aside] = [e for e in rec.evidence if e.fact == "probe.recordsize.set_aside"]
    assert (aside.value, aside.description) == (run, CPU_REASON)
    assert not [e for e in rec.evidence if e.fact.endswith(".iops")]  # none of its IOPS is shown as evidence


def test_a_newer_cpu_bound_run_leaves_the_answer_to_the_storage_run_before_it(host, tmp_path):
    first = store_run(tmp_path, IDLE_HOST, "storage")
    only_first = recordsize_item(host, tmp_path)
    second = store_run(tmp_path, BUSY_HOST, "cpu")
    rec = recordsize_item(host, tmp_path)
    assert decision(rec) == decision(only_first) and rec.recommended == "8K"
    assert f"probe run {first}" in rec.explanation and f"Probe run {second} on this pool was set aside" in rec.explanation
    store = ProbeStore(connect(tmp_path))
    [ev] = evidence(store, "tank", "postgres")
    assert ev.run_id == first and [a.run_id for a in ev.set_aside] == [second]


def test_an_unclear_run_is_still_evidence(host, tmp_path):
    store_run(tmp_path, IDLE_HOST, "unclear")
    assert recordsize_item(host, tmp_path).recommended == "8K"


def test_a_module_parameter_measured_only_beside_a_cpu_hog_keeps_the_rules_answer(host, tmp_path):
    """zfs_txg_timeout 1 measured well above the default 5, in a run set aside: the answer is the
    one without it, and names the pool the run was on."""
    store = ProbeStore(connect(tmp_path))
    run = store.start_run("tank", "postgres", None, {}, [], None)
    for value, repeats in (("5", (1000.0, 1020.0)), ("1", (1600.0, 1620.0))):
        for repeat, iops in enumerate(repeats, 1):
            store.add_result(ResultRow(
                run_id=run, parameter="zfs_txg_timeout", value=value, scope="module", baseline=value == "5",
                repeat=repeat, started_at=0.0, iops=iops, read_iops=0, write_iops=iops, read_bw=0, write_bw=0,
                write_p99=0.01, runtime_seconds=10, written_bytes=1 << 20, pool={}, job="", bound="cpu",
                bound_reason=CPU_REASON))
    store.end_run(run, "completed")
    store.conn.close()

    def item(measured):
        answer = recommend(host, BOOK, "postgres", pool="tank", measured=measured)
        return next(r for r in answer.recommendations if r.parameter == "zfs_txg_timeout")

    alone, rec = item(None), item(stored_evidence(tmp_path))
    assert decision(rec) == decision(alone) and rec.recommended == "5"
    assert f"Probe run {run} on pool tank (set only while the probe ran) was set aside" in rec.explanation


def test_a_cpu_bound_run_is_no_observation_for_the_model(tmp_path):
    pytest.importorskip("sklearn")
    from advisor.model.provider import ModelProvider
    from advisor.probe.description import ProbeDescription
    from advisor.probe.fio_job import Hygiene, build_job
    from advisor.store.results import StoredResults

    job = build_job(BOOK.workloads["postgres"], "/probe", Hygiene(max_file_bytes=48 << 20)).text
    provider = ModelProvider(StoredResults(tmp_path), ProbeDescription(), BOOK)
    workload = BOOK.workloads["postgres"]
    store_run(tmp_path, BUSY_HOST, "cpu", job)
    assert provider.local_samples("tank", workload) == []
    store_run(tmp_path, IDLE_HOST, "storage", job)
    kept = provider.local_samples("tank", workload)
    assert len(kept) == 4 and {(s.obs.value, s.obs.run) for s in kept} == {("128K", "2"), ("8K", "2")}


async def test_v1_probes_shows_each_runs_verdict(http_client, tmp_path):
    storage = store_run(tmp_path, IDLE_HOST, "storage")
    cpu = store_run(tmp_path, BUSY_HOST, "cpu")
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path))))
    shown = await (await client.get(f"/v1/probes/{cpu}")).json()
    assert shown["bound"]["verdict"] == "cpu" and shown["bound"]["repeats"] == {"cpu": 4}
    assert [(a["run_id"], a["parameter"], a["reason"]) for a in shown["bound"]["set_aside"]] == [
        (cpu, "recordsize", CPU_REASON)]
    assert {(r["bound"], r["bound_reason"]) for r in shown["results"]} == {("cpu", CPU_REASON)}
    assert shown["evidence"] == []  # the answer goes by the run before it
    kept = await (await client.get(f"/v1/probes/{storage}")).json()
    assert kept["bound"] == {"verdict": "storage", "repeats": {"storage": 4}, "set_aside": []}
    [ev] = kept["evidence"]
    assert ev["best"] == "8K" and [a["run_id"] for a in ev["set_aside"]] == [cpu]
    answer = await (await client.get("/recommend", params={"workload": "postgres", "pool": "tank"})).json()
    rec = next(r for r in answer["recommendations"] if r["parameter"] == "recordsize")
    assert f"Probe run {cpu} on this pool was set aside" in rec["explanation"]
    page = await (await client.get(f"/probes/{cpu}")).text()
    assert "<td>Pace set by</td><td>cpu</td>" in page
    assert "Set aside as evidence about the storage (recordsize, 4 repeats CPU-bound): the host&#x27;s CPU" in page
    assert "<td>Pace set by</td><td>storage</td>" in await (await client.get(f"/probes/{storage}")).text()
