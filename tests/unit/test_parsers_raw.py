"""Parsers on single recorded outputs (tests/fixtures/raw/README.md says where from)."""
from pathlib import Path

import pytest

from advisor.host import disks, kstat, txgs, zdb, zpool_iostat, zpool_status
from advisor.host.parsing import ParseError
from advisor.host.versions import has_json_output, parse_zfs_version_command
from advisor.hostmodel.facts import parse_version

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw" / "2.3.2-ssd-mirror2x2"


def raw(name: str) -> str:
    return (RAW / name).read_text()


def _tree(vdev):
    return (vdev.name, vdev.type, vdev.group, vdev.state, [_tree(c) for c in vdev.children])


def test_text_and_json_status_give_the_same_tree_and_scan():
    text = zpool_status.parse_status_text(raw("zpool-status-pPL.after-scrub.txt"))[0]
    as_json = zpool_status.parse_status_json(raw("zpool-status-pPL-j-json-int.after-scrub.txt"))[0]
    assert text.name == as_json.name == "tank" and text.state == as_json.state == "ONLINE"
    # Interior vdevs agree; the -L JSON leaves have no state (the 2.3.2 quirk
    # the collector avoids by not passing -L with -j).
    assert [(v.name, v.type, v.state) for v in text.root.children] == [
        (v.name, v.type, v.state) for v in as_json.root.children
    ]
    assert [leaf.state for leaf in as_json.root.leaves()] == [None] * 4
    assert text.scan.function == as_json.scan.function == "scrub"
    assert text.scan.state == as_json.scan.state == "finished"
    assert text.scan.errors == as_json.scan.errors == 0
    # Finished: issued stays below the to-examine estimate, progress is complete all the same.
    assert as_json.scan.issued_bytes == 729088 and as_json.scan.to_examine_bytes == 913408
    assert as_json.scan.progress_ratio == 1.0
    assert text.errors == as_json.errors == "No known data errors"


def test_json_status_without_L_has_complete_leaves():
    pool = zpool_status.parse_status_json(raw("zpool-status-j-P.txt"))[0]
    leaves = pool.root.leaves()
    assert len(leaves) == 4 and all(leaf.state == "ONLINE" and leaf.type == "disk" for leaf in leaves)
    assert leaves[0].path == "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_ssd0-part1"
    assert [v.type for v in pool.root.children] == ["mirror", "mirror"]


def test_vdev_iostat_31_columns_of_openzfs_2_3():
    rows = zpool_iostat.parse_vdev_iostat(raw("zpool-iostat-vlq-HpPL.txt"))["tank"]
    names = [name for name, _ in rows]
    assert names == ["tank", "mirror-0", "/dev/sda1", "/dev/sdb1", "mirror-1", "/dev/sdc1", "/dev/sdd1"]
    pool = rows[0][1]
    assert pool.allocated_bytes == 913408 and pool.free_bytes == 4025618432
    assert pool.write_ops_per_second == 132 and pool.write_bytes_per_second == 990595
    assert pool.latency_seconds["total_wait_write"] == pytest.approx(6714334e-9)
    assert pool.latency_seconds["asyncq_wait_read"] is None  # "-": no such I/O yet
    assert set(pool.queues) >= {"rebuildq_write_pend", "syncq_read_activ"}
    leaf = rows[2][1]
    assert leaf.allocated_bytes is None  # leaves have no capacity columns


def test_iostat_with_an_unknown_column_count_is_refused():
    with pytest.raises(ValueError, match="columns"):
        zpool_iostat.parse_vdev_iostat("tank\t1\t2\t3\n")


def test_latency_histogram_buckets_are_powers_of_two_in_seconds():
    hist = zpool_iostat.parse_latency_histograms(raw("zpool-iostat-vw-HpPL.txt"))["tank"]
    pool = hist["tank"]
    assert pool.unit == "seconds" and len(pool.bounds) == 37
    assert pool.bounds[0] == 1e-9 and pool.bounds[12] == 8191e-9
    assert len(pool.counts) == 11 and sum(pool.counts["total_wait_write"]) == 2300
    assert set(hist) == {"tank", "mirror-0", "/dev/sda1", "/dev/sdb1", "mirror-1", "/dev/sdc1", "/dev/sdd1"}


def test_size_histogram_buckets_start_at_512_bytes():
    pool = zpool_iostat.parse_size_histograms(raw("zpool-iostat-vr-HpPL.txt"))["tank"]["tank"]
    assert pool.unit == "bytes" and pool.bounds[0] == 1023  # 512..1023 bytes
    assert len(pool.counts) == 14 and sum(pool.counts["agg_async_write"]) == 254


def test_zdb_ashift_per_top_level_vdev():
    assert zdb.parse_zdb_ashift(raw("zdb-C-tank.txt")) == {"data": [12, 12]}
    with pytest.raises(ParseError, match="no vdev_tree"):  # understood nothing: says so
        zdb.parse_zdb_ashift("no config here")


def test_txgs_rows_and_units():
    rows = txgs.parse_txgs(raw("proc-spl-kstat-zfs-tank-txgs.txt"))
    first = rows[0]
    assert (first.txg, first.state, first.dirty_bytes, first.writes) == (5, "committed", 688128, 142)
    assert first.sync_seconds == pytest.approx(3.27892243)
    assert [r.txg for r in rows] == sorted(r.txg for r in rows)


def test_named_kstat_and_its_errors():
    stats = kstat.parse_named_kstat(raw("proc-spl-kstat-zfs-tank-iostats.txt"))
    assert stats.int("trim_extents_written") == 0 and "arc_read_count" in stats.values
    with pytest.raises(kstat.KStatFormatError):
        kstat.parse_named_kstat("1 2 3\nnot a header\n")
    with pytest.raises(kstat.KStatFormatError, match="not an integer"):
        kstat.parse_named_kstat("h\nname type data\nhits 4 lots\n")


@pytest.mark.parametrize(
    "text, want",
    [
        ("zfs-2.3.2-2~bpo12+2\nzfs-kmod-2.3.2-2~bpo12+2\n", ("2.3.2-2~bpo12+2", "2.3.2-2~bpo12+2")),
        ("zfs-2.1.11-1\nzfs-kmod-2.1.11-1\n", ("2.1.11-1", "2.1.11-1")),
    ],
)
def test_zfs_version(text, want):
    assert parse_zfs_version_command(text) == want


def test_json_output_only_from_2_3():
    assert not has_json_output(parse_version("2.1.11-1"))
    assert not has_json_output(parse_version("2.2.7"))
    assert has_json_output(parse_version("2.3.2-2~bpo12+2"))
    assert not has_json_output(None)


def test_scheduler_and_diskstats():
    assert disks.parse_scheduler("mq-deadline kyber [bfq] none") == "bfq"
    assert disks.parse_scheduler("none") == "none"
    # A line of /proc/diskstats from the lab VM (OpenZFS 2.3.2, hdd-stripe5, kernel 6.1).
    line = "   8       0 sda 423 0 21197 2310 409 0 5947 2116 0 3256 4586 0 0 0 0 38 159\n"
    stats = disks.parse_diskstats(line)["sda"]
    assert (stats.reads_completed, stats.sectors_written, stats.flushes_completed) == (423, 5947, 38)
    assert stats.write_seconds == pytest.approx(2.116) and stats.flush_seconds == pytest.approx(0.159)
