"""The lab's layouts (tests/lab/layouts.toml) as the layout planner sees them, and what the lab
recorded of each pool (its `zpool get` and `zfs get` outputs): shared by the capacity test and
the planner's lab table (tests/lab/planner_table.py)."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from advisor.layout.predict import DiskSpec
from advisor.layout.space import Vdev

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
import lablayouts  # noqa: E402 - after the sys.path line above


@dataclass(frozen=True)
class LabLayout:
    name: str
    vdevs: list[Vdev]
    disk_bytes: int
    ashift: int
    logical_block_size: int
    disks: tuple  # lablayouts.Disk


def vdevs_of(zpool_create: tuple[str, ...]) -> list[Vdev]:
    """The top-level vdevs of a `zpool create` argv (options and the pool name skipped)."""
    words = [w for w in zpool_create if w != "-f"]
    while words and words[0] == "-o":
        words = words[2:]
    groups: list[tuple[str, int]] = []
    for word in words[1:]:
        if word.startswith("@"):
            if groups and groups[-1][0] != "disk":
                groups[-1] = (groups[-1][0], groups[-1][1] + 1)
            else:
                groups.append(("disk", 1))
        else:
            groups.append((word, 0))
    vdevs = []
    for kind, width in groups:
        if kind.startswith("raidz"):
            vdevs.append(Vdev("raidz", width, int(kind[5:] or 1)))
        else:
            vdevs.extend([Vdev("disk", 1)] if kind == "disk" else [Vdev("mirror", width)])
    return vdevs


def lab_layouts() -> dict[str, LabLayout]:
    found = {}
    for name, lay in lablayouts.load().items():
        found[name] = LabLayout(name, vdevs_of(lay.zpool_create), min(d.size for d in lay.disks),
                                lay.expect["ashift"], max(d.logical_block_size for d in lay.disks), lay.disks)
    return found


def disks_of(lay: LabLayout) -> DiskSpec | None:
    """The layout's disks as the planner takes them, or None when they are not alike."""
    kinds = {(d.media, d.iops, d.bps, d.size) for d in lay.disks}
    if len(kinds) != 1:
        return None
    d = lay.disks[0]
    return DiskSpec(count=len(lay.disks), size_bytes=d.size, seq_read_bytes_per_second=d.bps,
                    seq_write_bytes_per_second=d.bps, random_read_iops=d.iops, random_write_iops=d.iops,
                    media=d.media, logical_block_size=d.logical_block_size, ashift=lay.ashift)


# tests/lab/experiments/planner-grid.sh's CSV columns (tests/lab/planner-grid writes them as the header)
GRID_COLUMNS = ("layout,zfs_version,test,recordsize,block_size,numjobs,fio_iops,fio_bytes_per_s,runtime_s,"
                "disk_read_bytes,disk_write_bytes,disk_busy_s,disk_read_bytes_each,guest_cpu_busy").split(",")
IDLE_SHARE = 0.02  # a disk no block's data lies on serves (almost) none of the reads


def disks_that_read(row: dict) -> list[int]:
    """A grid row's disks that served its reads (more than IDLE_SHARE of the bytes), in the pool's order."""
    each = [int(b) for b in row["disk_read_bytes_each"].split(";")]
    return [i for i, b in enumerate(each) if b > IDLE_SHARE * sum(each)]


def recorded_space(snapshot: Path, pool: str = "tank") -> tuple[int, int]:
    """(zpool get size, zfs get used + available) of `pool` in a host snapshot directory."""
    manifest = json.loads((snapshot / "manifest.json").read_text())
    values: dict[str, int] = {}
    for command in manifest["commands"]:
        argv = command["argv"]
        if argv[:2] in (["zpool", "get"], ["zfs", "get"]):
            for line in (snapshot / command["stdout_file"]).read_text().splitlines():
                fields = line.split("\t")
                if len(fields) >= 3 and fields[0] == pool and fields[1] in ("size", "used", "available"):
                    values[f"{argv[0]}.{fields[1]}"] = int(fields[2])
    return values["zpool.size"], values["zfs.used"] + values["zfs.available"]
