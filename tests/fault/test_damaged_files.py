"""Every file a source reads, damaged alone: the facts stay as they were, or a source says it
has no data and why. Never changed facts with every source still up (a "silent change").

Each recorded file of a lab snapshot that a source reads (each sysfs attribute of each block
device, each module parameter, each of a pool's kstats, each command's output) gets garbage,
a cut inside a line or inside a value, emptied, or numbers past 64 bits (tests/fault/breaks.py),
and the snapshot is collected as the service collects it. The unit tier runs one snapshot
and every 10th module parameter; FAULT_SUITE=full runs every parameter of an OpenZFS 2.1
(text `zpool status`) and a 2.3 (JSON) snapshot.
"""
from __future__ import annotations

import asyncio
import shutil

import pytest

from advisor.host.snapshot import collect_from_root
from support import HOSTS
from tests.fault.breaks import FileDamage, all_file_damage, damage_file
from tests.fault.tally import FULL

SNAPSHOTS = [HOSTS / "2.1.11" / "ssd-mirror2x2" / "idle"] + (
    [HOSTS / "2.3.2" / "hdd-raidz1x4" / "idle"] if FULL else [])
CASES = [(s, d) for s in SNAPSHOTS for d in all_file_damage(s, every_nth_param=1 if FULL else 10)]


def _facts(root) -> tuple[dict, dict[str, bool]]:
    host = asyncio.run(collect_from_root(root)).host
    facts = host.model_dump(mode="json", exclude={"sources", "collected_at"})
    return facts, {name: s.ok for name, s in host.sources.items()}


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """One working copy and the intact facts per snapshot; each case damages one file and puts it back."""
    made = {}
    for snapshot in SNAPSHOTS:
        root = tmp_path_factory.mktemp("host") / "snapshot"
        shutil.copytree(snapshot, root)
        made[snapshot] = (root, *_facts(root))
    return made


@pytest.mark.parametrize("snapshot, damage", CASES, ids=[f"{s.parent.parent.name}/{d.name}" for s, d in CASES])
def test_a_damaged_file_changes_no_fact_silently(snapshot, damage: FileDamage, copies, tally):
    root, facts_before, up_before = copies[snapshot]
    path = root / damage.path
    intact = path.read_bytes()
    try:
        damage_file(path, damage.kind)
        facts, up = _facts(root)
    finally:
        path.write_bytes(intact)
    # a source absent now (a pool's kstats when zpool get failed) is counted by the source that failed
    down = sorted(n for n, ok in up_before.items() if ok and n in up and not up[n])
    changed = facts != facts_before
    silent = changed and not down
    lost = [n for n in down if n != damage.source]
    tally.cases()
    tally.fault(not silent, len(lost), silent=silent)
    assert not silent, f"facts changed with every source up: {_difference(facts_before, facts)}"
    assert not lost, f"sources down beside {damage.source}: {lost}"


def _difference(before, after, where: str = "") -> str:
    """Where two fact trees first differ (for the failure message)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                return _difference(before.get(key), after.get(key), f"{where}.{key}")
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            if b != a:
                return _difference(b, a, f"{where}[{i}]")
    return f"{where}: {str(before)[:80]!r} -> {str(after)[:80]!r}"


@pytest.mark.parametrize("kind", ["garbage", "empty"])
async def test_a_damaged_rotational_is_said_not_served(http_client, tmp_path, kind):
    """The HDD advice hangs on /sys/block/<disk>/queue/rotational: a damaged one is no answer
    ("rotational unknown" would silently drop the HDD rules), the disks source says why."""
    from advisor.config.settings import Settings
    from advisor.service.app import create_app

    root = tmp_path / "host"
    shutil.copytree(HOSTS / "2.1.11" / "hdd-raidz1x4" / "idle", root)
    damaged = sorted(root.glob("sys/block/sd*/queue/rotational"))
    for path in damaged:
        damage_file(path, kind)
    client = await http_client(create_app(Settings(root=str(root))))
    facts = await (await client.get("/v1/facts")).json()
    metrics = await (await client.get("/metrics")).text()
    status = facts["sources"]["disks"]
    assert damaged and not status["ok"] and "queue/rotational" in status["reason"], status
    assert 'zfs_advisor_source_up{source="disks"} 0.0' in metrics
    assert (await client.get("/recommend", params={"workload": "postgres"})).status == 200
