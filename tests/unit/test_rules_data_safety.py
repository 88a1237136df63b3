"""checksum-off and dedup-table-room on the recorded lab hosts and on modified copies of them."""
from __future__ import annotations

import pytest

from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.hostmodel.facts import Vdev
from support import RECORDING, recorded_snapshots, snapshot_id
from support.recorded import recorded_host, with_dataset_properties

BOOK = load_rulebook()
SNAPSHOTS = recorded_snapshots("idle")
LAB_DATASETS = ("tank/pg", "tank/home", "tank/media", "tank/logs")
GIB = 1 << 30
TIB = 1 << 40


def verdict(host, workload: str, dataset: str, rule: str):
    return next((r for r in recommend(host, BOOK, workload, dataset=dataset).recommendations if r.rule == rule), None)


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=snapshot_id)
def test_recorded_datasets_keep_checksums_and_do_not_dedup(snap):
    host = recorded_host(snap)
    for dataset in LAB_DATASETS:
        checksum = verdict(host, "fileserver", dataset, "checksum-off")
        assert checksum is not None and checksum.status == "passed" and checksum.current == "on"
        assert verdict(host, "fileserver", dataset, "dedup-table-room") is None  # dedup=off: not applicable


@pytest.mark.parametrize("value", ["off", "noparity"])
@pytest.mark.parametrize("workload", sorted(BOOK.workloads))
def test_checksum_off_is_a_warning_for_every_workload(value, workload):
    # A modified recording: 2.3.2/ssd-mirror2x2 with checksum=<value> set on tank/pg.
    host = with_dataset_properties(recorded_host(RECORDING), "tank/pg", checksum=value)
    rec = verdict(host, workload, "tank/pg", "checksum-off")
    assert rec.status == "change" and rec.kind == "warning" and rec.current == value
    assert rec.apply_argv == ["zfs", "set", "checksum=on", "tank/pg"]
    assert "neither detected nor repaired" in rec.explanation and "mirror-0" in rec.explanation


def test_checksum_off_explains_that_dedup_overrides_it():
    # A modified recording: checksum=off and dedup=on on tank/pg.
    host = with_dataset_properties(recorded_host(RECORDING), "tank/pg", checksum="off", dedup="on")
    assert "dedup=on" in verdict(host, "postgres", "tank/pg", "checksum-off").explanation


def _deduplicating(snap, pool_size: int):
    # A modified recording: dedup=on on tank/media and the pool's size raised to `pool_size`.
    host = with_dataset_properties(recorded_host(snap), "tank/media", dedup="on")
    host.pools[0].size_bytes = pool_size
    return host


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=snapshot_id)
def test_dedup_without_the_ram_the_guide_asks_for_is_a_warning(snap):
    host = _deduplicating(snap, 8 * TIB)  # 10 GiB of RAM asked for, about 4 GiB recorded
    rec = verdict(host, "media", "tank/media", "dedup-table-room")
    assert rec.status == "change" and rec.kind == "warning"
    assert rec.recommended == "10G" and rec.requirement == ">= 10G"
    version = host.zfs.version_tuple[:2]
    if version >= (2, 3):
        assert "zpool ddtprune" in rec.explanation
        assert "pool.dedup_table_bytes" in {e.fact for e in rec.evidence}
    else:
        assert "can neither cap nor prune" in rec.explanation
        assert "pool.dedup_table_bytes" not in {e.fact for e in rec.evidence}  # no such property before 2.3


def test_dedup_within_the_guide_passes():
    host = _deduplicating(RECORDING, TIB)  # 1.25 GiB asked for
    assert verdict(host, "media", "tank/media", "dedup-table-room").status == "passed"


def _add_mirror(host, group: str):
    # ... and a modified vdev tree: a mirror of two NVMe devices added in allocation class `group`.
    disks = [Vdev(name=f"/dev/nvme{i}n1", type="disk", path=f"/dev/nvme{i}n1") for i in (0, 1)]
    host.pools[0].root.children.append(Vdev(name="mirror-9", type="mirror", group=group, children=disks))
    return host


def test_a_dedup_vdev_holds_the_table_so_ram_is_not_judged():
    host = _add_mirror(_deduplicating(RECORDING, 8 * TIB), "dedup")
    assert verdict(host, "media", "tank/media", "dedup-table-room") is None


def test_a_special_vdev_holds_the_table_unless_told_not_to():
    host = _add_mirror(_deduplicating(RECORDING, 8 * TIB), "special")
    assert verdict(host, "media", "tank/media", "dedup-table-room") is None
    host.module_params["zfs_ddt_data_is_special"] = "0"
    assert verdict(host, "media", "tank/media", "dedup-table-room").status == "change"
