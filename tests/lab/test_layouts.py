"""Ground truth of the lab: for every named layout on every OpenZFS line, the
VM reports exactly the disks and pool that layouts.toml describes.  If these
pass, a fixture recorded from a layout is what its name says."""

from __future__ import annotations

import re

import pytest
from labparams import lab_params

pytestmark = [pytest.mark.lab,
              pytest.mark.parametrize("lab_vm", lab_params(), indirect=True, scope="session")]


def disk_facts(vm) -> dict[str, dict[str, int | str]]:
    """name -> kernel device and its /sys/block queue attributes."""
    script = "\n".join(
        f'd=$(basename "$(readlink -f {d.by_id})"); q=/sys/block/$d/queue; '
        f'echo "{d.name} $d $(cat $q/rotational) $(cat $q/logical_block_size) '
        f'$(cat $q/physical_block_size) $(cat /sys/block/$d/size)"'
        for d in vm.layout.disks)
    out = vm.exec(script, check=True).stdout
    facts = {}
    for line in out.splitlines():
        name, dev, rot, lbs, pbs, sectors = line.split()
        facts[name] = {"dev": dev, "rotational": int(rot), "logical": int(lbs),
                       "physical": int(pbs), "bytes": int(sectors) * 512}
    return facts


def top_level_vdevs(status: str) -> list[tuple[str, list[str]]]:
    """(type, leaf paths) per top-level vdev of `zpool status -P tank`."""
    tops: list[tuple[str, list[str]]] = []
    in_config = False
    for line in status.splitlines():
        if re.match(r"\s*NAME\s+STATE", line):
            in_config = True
            continue
        if not in_config:
            continue
        if not line.strip() or line.strip().startswith("errors:"):
            break
        m = re.match(r"\t( *)(\S+)", line)
        if not m:
            continue
        depth, name = len(m.group(1)) // 2, m.group(2)
        if depth == 1:
            vtype = re.sub(r"-\d+$", "", name) if not name.startswith("/") else "disk"
            tops.append((vtype, [name] if vtype == "disk" else []))
        elif depth == 2:
            tops[-1][1].append(name)
    return tops


def test_zfs_version(lab_vm):
    version = lab_vm.exec("cat /sys/module/zfs/version", check=True).stdout.strip()
    assert version.startswith(lab_vm.image.zfs_version), version
    assert lab_vm.image.zfs_version.startswith(lab_vm.image.zfs_line)


def test_disks_rotational_and_sector_sizes(lab_vm):
    facts = disk_facts(lab_vm)
    for disk in lab_vm.layout.disks:
        f = facts[disk.name]
        assert f["rotational"] == (1 if disk.media == "hdd" else 0), (disk.name, f)
        assert f["logical"] == disk.logical_block_size, (disk.name, f)
        assert f["physical"] == disk.physical_block_size, (disk.name, f)
        assert f["bytes"] == disk.size, (disk.name, f)


def test_ashift(lab_vm):
    want = lab_vm.layout.expect["ashift"]
    zdb = lab_vm.exec("zdb -C tank", check=True).stdout
    ashifts = {int(v) for v in re.findall(r"^\s+ashift: (\d+)$", zdb, re.M)}
    assert ashifts == {want}, zdb
    if lab_vm.image.zfs_line != "2.1":  # vdev properties exist from 2.2 on
        top = lab_vm.exec("zpool status -P tank", check=True).stdout
        first = top_level_vdevs(top)[0]
        vdev = first[1][0] if first[0] == "disk" else f"{first[0]}-0"
        out = lab_vm.exec(["zpool", "get", "-Hp", "-o", "value", "ashift", "tank", vdev],
                          check=True).stdout.strip()
        assert int(out) == want


def test_vdev_tree(lab_vm):
    status = lab_vm.exec("zpool status -P tank", check=True).stdout
    tops = top_level_vdevs(status)
    assert [t for t, _ in tops] == lab_vm.layout.expect["top_vdevs"], status
    leaves = [re.sub(r"-part\d+$", "", p) for _, ls in tops for p in ls]
    assert sorted(leaves) == sorted(d.by_id for d in lab_vm.layout.disks), status
    assert "state: ONLINE" in status


# Values that `zfs get` shows differently from how they were set.
# From OpenZFS 2.2 on, xattr=sa is what "on" means, and it is shown as "on".
SHOWN_AS = {("xattr", "sa"): {"sa", "on"}}


def test_datasets_and_properties(lab_vm):
    for ds in lab_vm.layout.datasets:
        props = ",".join(ds.properties)
        out = lab_vm.exec(["zfs", "get", "-H", "-o", "property,value,source", props, ds.name],
                          check=True).stdout
        got = {p: (v, s) for p, v, s in (l.split("\t") for l in out.splitlines())}
        for prop, value in ds.properties.items():
            assert got[prop][0] in SHOWN_AS.get((prop, value), {value}), (ds.name, prop, got[prop])
        vtype = lab_vm.exec(["zfs", "get", "-H", "-o", "value", "type", ds.name], check=True).stdout
        assert vtype.strip() == ("volume" if ds.volume_size else "filesystem")


def test_capacity(lab_vm):
    cap = int(lab_vm.exec("zpool list -Hp -o capacity tank", check=True).stdout.strip().rstrip("%"))
    floor = lab_vm.layout.expect.get("min_capacity_percent")
    if floor is None:
        assert cap < 10  # a fresh pool with a few empty datasets
    else:
        assert floor <= cap < 97
