"""Each source broken alone, on replayed lab snapshots: it says "no data" and why, the rest is served.

For every source of facts and every way it can break (tests/fault/breaks.py), a
copy of a recorded lab host gets that one fault and the real app serves it:
/recommend, /v1/facts, /v1/pools and /metrics must answer 200, the broken source
must report `source_up` 0 with a reason, and every other source that was up on
the intact copy must still be up (else: data lost). The unit tier runs one
recorded snapshot (OpenZFS 2.1, text zpool status); FAULT_SUITE=full runs every layout of
both OpenZFS lines at rest plus one under load.
"""
from __future__ import annotations

import json
import re
import shutil

import pytest

from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import recorded_snapshots, snapshot_id
from tests.fault.breaks import Fault, all_faults, broken_copy
from tests.fault.tally import FULL

QUICK = ("2.1.11/ssd-mirror2x2/idle",)  # text zpool status, the format that broke silently
# Full: every layout of both OpenZFS lines at rest, and one under load whose zdb -C timed out.
FULL_SET = ("/idle", "2.1.11/hdd-raidz1x4/load")
SNAPSHOTS = [p for p in recorded_snapshots()
             if snapshot_id(p) in QUICK or FULL and any(k in snapshot_id(p) for k in FULL_SET)]
ENDPOINTS = ("/recommend?workload=postgres", "/recommend?workload=postgres&dataset=tank/pg", "/v1/facts",
             "/v1/pools", "/metrics")


async def _serve(http_client, root) -> tuple[dict[str, int], dict, str]:
    client = await http_client(create_app(Settings(root=str(root))))
    statuses = {}
    for path in ENDPOINTS:
        resp = await client.get(path)
        statuses[path] = resp.status
        await resp.read()
    facts = await (await client.get("/v1/facts")).json()
    metrics = await (await client.get("/metrics")).text()
    return statuses, facts, metrics


@pytest.fixture(scope="module")
def baselines():
    return {}


@pytest.mark.parametrize("fault", all_faults(), ids=lambda f: f.name)
@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=snapshot_id)
async def test_one_broken_source_fails_alone(http_client, tmp_path, snapshot, fault: Fault, baselines, tally):
    if snapshot not in baselines:
        _, facts, _ = await _serve(http_client, snapshot)
        baselines[snapshot] = ({n for n, s in facts["sources"].items() if s["ok"]}, _without_sources(facts))
    up_before, facts_before = baselines[snapshot]
    if fault.source not in up_before:
        pytest.skip(f"{fault.source} has no data on the intact recording")

    statuses, facts, metrics = await _serve(http_client, broken_copy(snapshot, fault, tmp_path / "host"))
    status = facts["sources"].get(fault.source)
    exported = re.search(rf'^zfs_advisor_source_up{{source="{re.escape(fault.source)}"}} (\S+)$', metrics, re.M)
    lost = sorted(n for n in up_before - {fault.source} if n in facts["sources"] and not facts["sources"][n]["ok"])
    # Either the source says it has no data, or the fault missed what it reads (a file cut
    # after the one line used) and the facts served are exactly those of the intact host.
    said_so = status is not None and not status["ok"] and bool(status["reason"]) and exported is not None \
        and float(exported.group(1)) == 0
    unharmed = status is not None and status["ok"] and _without_sources(facts) == facts_before
    # A dataset can only be advised on when `zfs get` listed it; else a 404 that says why.
    expected = {p: 404 if fault.source == "zfs_get" and "dataset=" in p else 200 for p in statuses}
    served = statuses == expected
    tally.cases()
    tally.fault(served and (said_so or unharmed), len(lost))
    assert served, (statuses, expected)
    assert said_so or unharmed, status
    assert not lost, {n: facts["sources"][n]["reason"] for n in lost}


def _without_sources(facts: dict) -> dict:
    return {k: v for k, v in facts.items() if k not in ("sources", "collected_at")}


@pytest.mark.parametrize("kind", ["failed", "timeout"])
async def test_dataset_advice_when_zpool_get_fails_and_zfs_get_works(http_client, tmp_path, kind):
    """At start-up on a busy host `zpool get` can time out while `zfs get` answers: the dataset's
    pool is unknown, its advice is still given (pool rules need the pool and are left out)."""
    snapshot = next(p for p in recorded_snapshots() if snapshot_id(p) == QUICK[0])
    client = await http_client(create_app(Settings(root=str(broken_copy(snapshot, Fault("zpool_get", kind), tmp_path / "h")))))
    resp = await client.get("/recommend", params={"workload": "postgres", "dataset": "tank/pg"})
    body = await resp.json()
    assert resp.status == 200, body
    assert body["target"]["dataset"] == "tank/pg"
    scopes = {r["scope"] for r in body["recommendations"]}
    assert "dataset" in scopes and not scopes & {"pool", "pool-create"}
    assert any(r["parameter"] == "recordsize" for r in body["recommendations"])


def _module_absent(root) -> str:
    """The zfs module unloaded (or never loaded): no /sys/module/zfs, no /proc/spl/kstat/zfs."""
    for tree in ("sys/module/zfs", "proc/spl"):
        shutil.rmtree(root / tree)
    manifest = json.loads((root / "manifest.json").read_text())
    gone = ("/sys/module/zfs", "/proc/spl")
    manifest["files"] = [f for f in manifest["files"] if not f.startswith(gone)]
    manifest["listings"] = {k: v for k, v in manifest["listings"].items() if not k.startswith(gone)}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return "zfs"


def _pool_exported(root) -> str:
    """The pool exported between the zpool commands and the kstat reads: its kstat directory is gone."""
    shutil.rmtree(root / "proc/spl/kstat/zfs/tank")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["files"] = [f for f in manifest["files"] if not f.startswith("/proc/spl/kstat/zfs/tank/")]
    manifest["listings"].pop("/proc/spl/kstat/zfs/tank", None)
    (root / "manifest.json").write_text(json.dumps(manifest))
    return "txgs:tank"


@pytest.mark.parametrize("damage", [_module_absent, _pool_exported], ids=lambda f: f.__name__.lstrip("_"))
async def test_host_changes_under_the_advisor(http_client, tmp_path, damage, tally):
    """Whole-host faults on a replayed snapshot: the module absent (no data, not an error, every
    endpoint answers) and a pool exported mid-collection (its kstat sources say so)."""
    snapshot = next(p for p in recorded_snapshots() if snapshot_id(p) == QUICK[0])
    root = tmp_path / "host"
    shutil.copytree(snapshot, root)
    source = damage(root)
    statuses, facts, metrics = await _serve(http_client, root)
    status = facts["sources"].get(source)
    survived = all(s in (200, 404) for s in statuses.values()) and status is not None and not status["ok"] \
        and f'zfs_advisor_source_up{{source="{source}"}} 0.0' in metrics
    tally.cases()
    tally.fault(survived)
    assert all(s < 500 for s in statuses.values()), statuses
    assert status is not None and not status["ok"] and status["reason"], facts["sources"]
    assert f'zfs_advisor_source_up{{source="{source}"}} 0.0' in metrics
