"""The sources' table (advisor/host/sources.py) is what runs and what is documented.

Each recorded lab host reports exactly the table's sources (the pool's for `{pool}`), every
command it recorded but `zfs version` is a source's, and docs/reliability.md lists the table.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support import recorded_snapshots, snapshot_id

from advisor.host.snapshot import collect_from_root
from advisor.host.sources import POOL, SOURCES, source_names, source_of_command

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
