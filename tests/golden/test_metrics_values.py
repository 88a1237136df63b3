"""/metrics values for every recorded lab snapshot equal the raw recorded outputs.

The raw side is read here with no project code: the snapshot's commands/*.out
(scripted zpool/zfs output) and kstat/diskstats text. Golden files pin the
whole output; these tests say why the numbers in them are right.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.config.settings import Settings
from advisor.service.app import create_app
from support import recorded_snapshots

SNAPSHOTS = recorded_snapshots()
# zpool iostat -r columns (zpool-iostat(8)) and the labels the exporter gives them
SIZE_COLUMNS = [(io, q, op) for q, op in (("syncq", "read"), ("syncq", "write"), ("asyncq", "read"),
                                         ("asyncq", "write"), ("scrubq", "read"), ("trimq", "trim"),
                                         ("rebuildq", "write")) for io in ("individual", "aggregated")]


def command_output(snapshot: Path, *argv_part: str) -> str | None:
    manifest = json.loads((snapshot / "manifest.json").read_text())
    for command in manifest["commands"]:
        argv = command["argv"]
        if all(a in argv for a in argv_part) and command["returncode"] == 0:
            return (snapshot / command["stdout_file"]).read_text()
    return None


def pool_section(text: str, pool: str) -> list[list[str]]:
    """Rows of the pool's own section in scripted `zpool iostat -w/-r` output."""
    rows, inside = [], False
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 1 and line.strip():
            inside = line.strip() == pool
        elif inside and len(fields) > 1:
            rows.append(fields[1:])
    return rows


@pytest.fixture
async def samples(request, http_client):
    # diskstats on: their values are checked against /proc/diskstats below
    client = await http_client(create_app(Settings(root=str(request.param), metrics_diskstats=True)))
    text = await (await client.get("/metrics")).text()
    out: dict[tuple, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return request.param, out


def get(samples: dict, family: str, **labels) -> float:
    return samples[(family, tuple(sorted(labels.items())))]


@pytest.mark.parametrize("samples", SNAPSHOTS, ids=lambda p: "/".join(p.parts[-3:]), indirect=True)
def test_values_equal_the_raw_recorded_outputs(samples):
    snapshot, values = samples
    pools = {labels[0][1] for (name, labels) in values if name == "zfs_pool_size_bytes"}
    assert pools, "no pool exported"
    latency = command_output(snapshot, "iostat", "-vw")
    sizes = command_output(snapshot, "iostat", "-vr")
    for pool in pools:
        rows = pool_section(latency, pool)
        for column, (queue, op) in enumerate((("total", "read"), ("total", "write"), ("disk", "read"))):
            expected = sum(int(r[column]) for r in rows)
            assert get(values, "zfs_pool_latency_seconds_count", pool=pool, queue=queue, op=op) == expected
        rows = pool_section(sizes, pool)
        for column, (io, queue, op) in enumerate(SIZE_COLUMNS[: len(rows[0])]):
            expected = sum(int(r[column]) for r in rows)
            assert get(values, "zfs_pool_request_size_bytes_count", pool=pool, io=io, queue=queue, op=op) == expected
        # the pool's byte counters: the iostats kstat's fields, by path (OpenZFS >= 2.3 has them)
        kstat = (snapshot / f"proc/spl/kstat/zfs/{pool}/iostats").read_text()
        fields = dict(re.findall(r"^(\w+)\s+\d+\s+(\d+)$", kstat, re.M))
        for path in ("arc", "direct"):
            if f"{path}_read_bytes" in fields:
                assert get(values, "zfs_pool_read_bytes_total", pool=pool, path=path) == int(
                    fields[f"{path}_read_bytes"])
                assert get(values, "zfs_pool_written_bytes_total", pool=pool, path=path) == int(
                    fields[f"{path}_write_bytes"])
                assert get(values, "zfs_pool_writes_total", pool=pool, path=path) == int(fields[f"{path}_write_count"])
            else:
                assert ("zfs_pool_read_bytes_total", (("path", path), ("pool", pool))) not in values
        txgs = (snapshot / f"proc/spl/kstat/zfs/{pool}/txgs").read_text()
        committed = [int(line.split()[0]) for line in txgs.splitlines()[2:] if line.split()[2:3] == ["C"]]
        if committed:
            assert get(values, "zfs_pool_txgs_total", pool=pool) == max(committed)
    arcstats = (snapshot / "proc/spl/kstat/zfs/arcstats").read_text()
    assert get(values, "zfs_arc_size_bytes") == int(re.search(r"^size\s+\d+\s+(\d+)$", arcstats, re.M).group(1))
    rows = [line.split("\t")[:3] for line in command_output(snapshot, "zfs", "get").splitlines()]
    kinds = {name: value for name, prop, value in rows if prop == "type"}
    for name, prop, value in rows:
        if prop == "used":  # zfs_exporter's labels: name, pool, type
            labels = {"name": name, "pool": name.split("/")[0], "type": kinds[name]}
            assert get(values, "zfs_dataset_used_bytes", **labels) == int(value)
    disks = 0
    for line in (snapshot / "proc/diskstats").read_text().splitlines():
        f = line.split()
        key = ("zfs_advisor_disk_read_bytes_total", (("device", f[2]),))
        if key in values:
            assert values[key] == int(f[5]) * 512
            disks += 1
    assert disks == len({labels for (name, labels) in values if name == "zfs_advisor_disk_read_bytes_total"}) > 0
