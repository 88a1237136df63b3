"""/metrics says what the probe store holds: runs by outcome, the last run, the best and baseline
candidates' IOPS and write p99, the queue and the profiler's daily budget (real app, real store)."""
from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from advisor.config.settings import Settings
from advisor.host.snapshot import collect_from_root
from advisor.probe.pooldesc import describe_pool
from advisor.service.app import create_app
from advisor.store.db import connect
from advisor.store.probes import ProbeStore, ResultRow
from support import RECORDING

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def _row(run_id: int, value: str, iops: float, p99: float, baseline: bool) -> ResultRow:
    return ResultRow(run_id=run_id, parameter="recordsize", value=value, scope="dataset", baseline=baseline, repeat=1,
                     started_at=0.0, iops=iops, read_iops=iops, write_iops=0, read_bw=0, write_bw=0, write_p99=p99,
                     runtime_seconds=10, written_bytes=3 << 20, pool={}, job="")


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def test_probe_families_from_the_store(http_client, tmp_path):
    store = ProbeStore(connect(tmp_path))
    done = store.start_run("tank", "postgres", None, {}, [], None)
    for value, iops, p99, base in (("128K", 450.0, 0.07, True), ("8K", 1160.0, 0.0065, False), ("16K", 980.0, 0.04, False)):
        store.add_result(_row(done, value, iops, p99, base).model_copy(update={"layout_written_bytes": 1 << 20}))
    store.end_run(done, "completed")
    store.end_run(store.start_run("tank", "postgres", None, {}, [], None), "aborted", "foreground I/O")
    store.queue_run("tank", "postgres", None, {}, {})
    ended = store.run(done).ended_at
    store.conn.close()
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path),
                                                   profiler={"pools": ["tank"], "daily_seconds": 1200})))
    text = await (await client.get("/metrics")).text()
    got = _samples(text)
    pw = (("pool", "tank"), ("workload", "postgres"))
    assert got[("zfs_advisor_probe_runs_total", (("outcome", "completed"), *pw))] == 1
    assert got[("zfs_advisor_probe_runs_total", (("outcome", "aborted"), *pw))] == 1
    assert got[("zfs_advisor_probe_last_run_timestamp_seconds", pw)] >= ended
    best = (("candidate", "best"), ("parameter", "recordsize"), *pw[:1], ("value", "8K"), *pw[1:])
    base = (("candidate", "baseline"), ("parameter", "recordsize"), *pw[:1], ("value", "128K"), *pw[1:])
    assert got[("zfs_advisor_probe_iops", best)] == 1160 and got[("zfs_advisor_probe_iops", base)] == 450
    assert got[("zfs_advisor_probe_write_latency_p99_seconds", best)] == 0.0065
    assert not [k for k in got if k[0] == "zfs_advisor_probe_iops" and ("value", "16K") in k[1]]
    assert got[("zfs_advisor_probe_queued_runs", ())] == 1
    # what the runs wrote and what their layouts wrote
    assert got[("zfs_advisor_profiler_budget_used_bytes", (("pool", "tank"),))] == 3 * (3 << 20) + 3 * (1 << 20)
    assert got[("zfs_advisor_profiler_budget_limit_seconds", (("pool", "tank"),))] == 1200
    assert 0 <= got[("zfs_advisor_profiler_budget_used_seconds", (("pool", "tank"),))] < 60
    doc = DOC.read_text()
    families = set(re.findall(r"^# TYPE (zfs_advisor_(?:probe|profiler)_\S+) ", text, re.MULTILINE))
    assert len(families) == 15 and not [f for f in families if f"`{f}`" not in doc]


async def test_the_latest_runs_are_exported_whole_with_the_pool_they_measured(http_client, tmp_path):
    """Every repeat of every candidate, the run's working set and ARC cap, and the pool's shape with
    its disks' model and the OpenZFS series (the recording's): what a fleet's model reads back."""
    host = (await collect_from_root(str(RECORDING), 30.0)).host
    descriptor = describe_pool(host.pools[0], host.disks)
    store = ProbeStore(connect(tmp_path))
    older = store.start_run("tank", "postgres", None, {}, [], descriptor)
    store.add_result(_row(older, "128K", 999.0, 0.05, True).model_copy(update={"run_id": older, "pool": descriptor}))
    store.end_run(older, "completed")
    run = store.start_run("tank", "postgres", None, {}, [], descriptor)
    for value, repeat, iops, bw, base in (("128K", 1, 450.0, 3.0e6, True), ("128K", 2, 470.0, 3.2e6, True),
                                          ("8K", 1, 1160.0, 9.0e6, False), ("8K", 2, 1100.0, 8.8e6, False)):
        store.add_result(_row(run, value, iops, 0.01, base).model_copy(update={
            "repeat": repeat, "read_bw": bw, "write_bw": 1e5, "pool": descriptor, "working_set_bytes": 512 << 20,
            "arc_max_bytes": 64 << 20}))
    store.end_run(run, "completed")
    store.conn.close()
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path))))
    got = _samples(await (await client.get("/metrics")).text())
    repeats = {(dict(k)["value"], dict(k)["repeat"]): v for (name, k), v in got.items()
               if name == "zfs_advisor_probe_repeat_iops"}
    assert repeats == {("128K", "1"): 450.0, ("128K", "2"): 470.0, ("8K", "1"): 1160.0, ("8K", "2"): 1100.0}
    eight = (("parameter", "recordsize"), ("pool", "tank"), ("repeat", "2"), ("value", "8K"), ("workload", "postgres"))
    assert got[("zfs_advisor_probe_repeat_bandwidth_bytes_per_second", eight)] == 8.8e6 + 1e5
    assert got[("zfs_advisor_probe_repeat_write_latency_p99_seconds", eight)] == 0.01
    run_labels = (("parameter", "recordsize"), ("pool", "tank"), ("workload", "postgres"))
    assert got[("zfs_advisor_probe_run_working_set_bytes", run_labels)] == 512 << 20
    assert got[("zfs_advisor_probe_run_arc_max_bytes", run_labels)] == 64 << 20
    info = [dict(k) for (name, k), v in got.items() if name == "zfs_advisor_probe_pool_info" and v == 1]
    assert info == [{"pool": "tank", "media": "ssd", "vdev_type": "mirror", "top_vdevs": "2", "vdev_width": "2",
                     "ashift": "12", "disks": "4", "disk_model": "QEMU HARDDISK", "openzfs": "2.3"}]


async def test_no_store_no_probe_families_and_none_created(http_client, tmp_path):
    client = await http_client(create_app(Settings(root=str(RECORDING), state_dir=str(tmp_path / "none"))))
    text = await (await client.get("/metrics")).text()
    assert "zfs_advisor_probe_" not in text and "zfs_advisor_profiler_" not in text
    assert not (tmp_path / "none").exists()
