"""The sources' table (advisor/host/sources.py) is what runs and what is documented.

Each recorded lab host reports exactly the table's sources (the pool's for `{pool}`), every
command it recorded but `zfs version` is a source's, and docs/reliability.md lists the table.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from advisor.host.snapshot import collect_from_root
from advisor.host.sources import POOL, SOURCES, source_names, source_of_command, source_of_path
from support import recorded_snapshots, snapshot_id

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = recorded_snapshots("idle")


def sources_table() -> str:
    """The table docs/reliability.md holds, from SOURCES."""
    rows = ["| source | reads | fills |", "| --- | --- | --- |"]
    for s in SOURCES:
        reads = ", ".join(f"`{' '.join(c)}`" for c in s.commands) or ", ".join(f"`{p}`" for p in s.paths)
        rows.append(f"| `{s.name}` | {reads} | {s.fills} |")
    return "\n".join(rows) + "\n"


def test_the_docs_list_the_tables_sources():
    assert sources_table() in (ROOT / "docs" / "reliability.md").read_text(), sources_table()


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=snapshot_id)
def test_a_recorded_host_reports_the_tables_sources(snapshot):
    host = asyncio.run(collect_from_root(snapshot)).host
    pools = [p.name for p in host.pools]
    expected = {n.replace(POOL, pool) if POOL in n else n for n in source_names() for pool in pools}
    expected -= {s.name for s in SOURCES if s.only_failures}
    assert set(host.sources) == expected


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=snapshot_id)
def test_every_recorded_command_is_a_sources(snapshot):
    argvs = [c["argv"] for c in json.loads((snapshot / "manifest.json").read_text())["commands"]]
    assert [a for a in argvs if source_of_command(a) is None] == [["zfs", "version"]]


def test_a_pool_command_is_one_line_of_the_table():
    """The per-pool commands run from the table: each has its parser and what puts its part on a pool."""
    pool_commands = [s for s in SOURCES if s.parse is not None]
    assert {s.name for s in pool_commands} == {"zpool_iostat", "zpool_iostat_latency", "zpool_iostat_size"}
    assert all(s.attach is not None and len(s.commands) == 1 for s in pool_commands)


def test_a_pool_file_is_one_line_of_the_table():
    """The per-pool files are read from the table too: each has its one path, its reader and what
    puts its part on a pool (no step of its own in host/collect.py)."""
    pool_files = [s for s in SOURCES if s.read is not None]
    assert {"txgs:{pool}", "tx_assign:{pool}"} <= {s.name for s in pool_files}
    assert all(s.attach is not None and s.parse is None and len(s.paths) == 1 and POOL in s.paths[0]
               for s in pool_files)


@pytest.mark.parametrize("snapshot", SNAPSHOTS[:1] + SNAPSHOTS[-1:], ids=snapshot_id)
def test_every_recorded_kstat_is_a_sources(snapshot):
    """Each file a recording holds under /proc/spl/kstat is read by a source the host reports (the fault
    suite breaks it in that source's name)."""
    host = asyncio.run(collect_from_root(snapshot)).host
    files = [f for f in json.loads((snapshot / "manifest.json").read_text())["files"] if f.startswith("/proc/spl/kstat/")]
    assert files and {f: source_of_path(f) in host.sources for f in files} == dict.fromkeys(files, True)
    assert source_of_path("/proc/spl/kstat/zfs/tank/txgs") == "txgs:tank"
    assert source_of_path("/proc/spl/kstat/zfs/tank/objset-0x36") == "pool_kstats:tank"
    assert source_of_path("/proc/spl/kstat/zfs/zil") == "kstat:zil"
    assert source_of_path("/proc/spl/kstat/zfs/tank/objset-0x36/x") is None
