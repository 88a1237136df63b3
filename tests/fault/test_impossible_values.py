"""Impossible host values (tests/fault/impossible.py): each is no value. The facts collected from
the damaged copy are the intact ones, or the value is absent (nothing in its place) and its source
says it failed, and why. Never an impossible value served, never a change with every source up
(a "silent change"). And end to end: a host whose MemTotal is 0 (and more) gets no advice built
on it from /recommend, and /healthz names the sources that failed.
"""
from __future__ import annotations

import asyncio
import shutil

import pytest

from advisor.host.snapshot import collect_from_root
from support import HOSTS
from tests.fault.impossible import CASES, Impossible, make_impossible

SNAPSHOT = HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"


def _facts(root) -> tuple[dict, dict]:
    host = asyncio.run(collect_from_root(root)).host
    return host.model_dump(mode="json", exclude={"sources", "collected_at"}), host.sources


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """One working copy and its intact facts; each case damages one file and puts it back."""
    root = tmp_path_factory.mktemp("host") / "snapshot"
    shutil.copytree(SNAPSHOT, root)
    facts, sources = _facts(root)
    return root, facts, {name for name, s in sources.items() if s.ok}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_impossible_value_is_no_value(case: Impossible, copy, tally):
    root, facts_before, up_before = copy
    path = None
    try:
        path = make_impossible(root, case)
        facts, sources = _facts(root)
    finally:
        if path is not None:
            path.write_bytes((SNAPSHOT / path.relative_to(root)).read_bytes())
    status = sources.get(case.source)
    reported = status is not None and not status.ok and bool(status.reason)
    changed = facts != facts_before
    replaced = _replaced(facts_before, facts)  # a value in place of the true one, not an absence
    lost = sorted(n for n in up_before - {case.source} if n in sources and not sources[n].ok)
    tally.cases()
    tally.fault(not replaced and (reported or not changed), len(lost), silent=changed and not reported)
    assert reported or not changed, f"facts changed with {case.source} up: {replaced or 'values left out'}"
    assert not replaced, f"{replaced} (source {case.source}: {status})"
    assert not lost, f"sources down beside {case.source}: {lost}"


def _replaced(before, after, where: str = "") -> str | None:
    """Where `after` holds a value `before` did not (rather than the same, or none): None if nowhere.
    A pool's health whose value was left out is UNKNOWN (zpool's word for it)."""
    if after is None or after == before or where.endswith(".health") and after == "UNKNOWN":
        return None
    if isinstance(before, dict) and isinstance(after, dict):
        return next((found for key in after if (found := _replaced(before.get(key), after[key], f"{where}.{key}"))),
                    None)
    if isinstance(before, list) and isinstance(after, list):
        if len(before) == len(after):
            return next((found for i, (b, a) in enumerate(zip(before, after, strict=True))
                         if (found := _replaced(b, a, f"{where}[{i}]"))), None)
        return next((f"{where}[{i}]: {str(a)[:80]!r}" for i, a in enumerate(after) if a not in before), None)
    return f"{where}: {str(before)[:80]!r} -> {str(after)[:80]!r}"


# The end-to-end example and more, at once: what the advice would be built on.
HOSTILE = ("meminfo/MemTotal=0", "cpus_online/0-1000000", "hostname/newline", "zpool_get/health=WEIRD",
           "zpool_get/capacity=150", "zfs_get/recordsize=0", "zdb:tank/ashift=99")
MEMORY_PARAMETERS = ("zfs_arc_max", "zfs_dirty_data_max")


@pytest.mark.parametrize("workload", ["general", "postgres"])
async def test_no_advice_is_built_on_an_impossible_host(http_client, tmp_path, workload):
    from advisor.config.settings import Settings
    from advisor.service.app import create_app

    root = tmp_path / "host"
    shutil.copytree(SNAPSHOT, root)
    for case in (c for c in CASES if c.name in HOSTILE):
        make_impossible(root, case)
    client = await http_client(create_app(Settings(root=str(root))))
    resp = await client.get("/recommend", params={"workload": workload})
    text = await resp.text()
    answer = await resp.json()
    health = await (await client.get("/healthz")).json()
    metrics = await (await client.get("/metrics")).text()

    assert resp.status == 200
    built_on_memory = [r for r in answer["recommendations"]
                       if r["parameter"] in MEMORY_PARAMETERS and r["status"] in ("passed", "failed")]
    assert not built_on_memory, built_on_memory
    assert not [r for r in answer["recommendations"] if r["parameter"].startswith("zfs_") and r["change"]]
    for word in ("WEIRD", "0B of RAM", "1000001", "zfs\nlab", "ashift=99", "150%"):
        assert word not in text, word
    failed = set(health["sources_failed"])
    assert {"meminfo", "cpus_online", "hostname", "zpool_get", "zfs_get", "zdb:tank"} <= failed, failed
    for source in ("meminfo", "zpool_get", "zfs_get", "hostname"):
        assert f'zfs_advisor_source_up{{source="{source}"}} 0.0' in metrics, source
