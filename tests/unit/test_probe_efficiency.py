"""What a layout should give from its disks, and the diagnosis of the gap (pure)."""
from __future__ import annotations

from pathlib import Path

import pytest

from advisor.host.txgs import parse_txgs
from advisor.hostmodel.facts import DiskStats
from advisor.probe.efficiency_run import efficiency_job
from advisor.probe.plan_runner import arc_hit_ratio
from advisor.probe.pool_efficiency import (
    TxgsDuring,
    diagnose,
    disk_busy,
    expected_bandwidth,
    layout_rule,
    raw_read_argv,
    raw_read_rates,
    too_little_moved,
    txgs_during,
)

MB = 1e6


def layout(*vdevs: tuple[str, int, int | None]) -> dict:
    out, n = [], 0
    for kind, width, parity in vdevs:
        out.append({"type": kind, "width": width, "nparity": parity, "disks": [f"d{n + i}" for i in range(width)]})
        n += width
    return {"vdevs": out}


RAW = {f"d{i}": 20 * MB for i in range(8)}


@pytest.mark.parametrize("desc, read, write", [
    (layout(*[("disk", 1, None)] * 4), 4, 4),  # stripe of 4: the sum
    (layout(("raidz1", 4, 1)), 3, 3),  # raidz1 of 4: three data disks
    (layout(("raidz2", 6, 2)), 4, 4),
    (layout(("mirror", 2, None)), 2, 1),  # a mirror reads from both sides, writes both copies
    (layout(("mirror", 2, None), ("mirror", 2, None)), 4, 2),
])
def test_expected_bandwidth(desc, read, write):
    assert expected_bandwidth(desc, RAW, "read") == read * 20 * MB
    assert expected_bandwidth(desc, RAW, "write") == write * 20 * MB


def test_the_report_says_which_rule():
    assert layout_rule(layout(*[("disk", 1, None)] * 4), "write") == "4 x disk of 1: 1 disk each = 4 disks"
    mirrors = layout(("mirror", 2, None), ("mirror", 2, None))
    assert layout_rule(mirrors, "write") == "2 x mirror of 2: 1 disk each = 2 disks"
    assert layout_rule(layout(("raidz1", 4, 1)), "read") == "1 x raidz1 of 4: 3 disks each = 3 disks"


def test_slowest_member_bounds_a_vdev():
    raw = {**RAW, "d1": 5 * MB}
    assert expected_bandwidth(layout(("raidz1", 4, 1)), raw, "write") == 3 * 5 * MB


def test_raw_read_is_read_only_and_reads_every_disk_at_once():
    argv = raw_read_argv(["/dev/sdb", "/dev/sdc"], 5)
    assert argv.index("--readonly") < argv.index("--name=disk0")  # global: applies to every job
    assert "--rw=read" in argv and not any(a.startswith("--rw=") and "write" in a for a in argv)
    assert [a for a in argv if a.startswith("--filename=")] == ["--filename=/dev/sdb", "--filename=/dev/sdc"]
    for bad in (["/tank/file"], ["/dev/sdb", "/dev/sd\nc"]):
        with pytest.raises(ValueError):
            raw_read_argv(bad, 5)


def test_raw_read_rates_by_device():
    doc = {"jobs": [{"jobname": "disk1", "read": {"bw_bytes": 9_000_000}},
                    {"jobname": "disk0", "read": {"bw_bytes": 10_000_000}}]}
    assert raw_read_rates(doc, ["/dev/sdb", "/dev/sdc"]) == {"/dev/sdb": 10e6, "/dev/sdc": 9e6}
    with pytest.raises(ValueError, match="/dev/sdc"):
        raw_read_rates({"jobs": doc["jobs"][1:]}, ["/dev/sdb", "/dev/sdc"])  # disk1's job missing
    with pytest.raises(ValueError, match="error 5"):
        raw_read_rates({"jobs": [{"jobname": "disk0", "error": 5}]}, ["/dev/sdb"])


def _stats(reads: int, sectors_read: int, io_ms: int) -> DiskStats:
    return DiskStats(reads_completed=reads, reads_merged=0, sectors_read=sectors_read, read_seconds=0,
                     writes_completed=0, writes_merged=0, sectors_written=0, write_seconds=0, ios_in_progress=0,
                     io_seconds=io_ms / 1000, weighted_io_seconds=0)


def test_diagnosis_names_where_the_rest_went():
    desc = layout(("mirror", 2, None))
    zero = {"d0": _stats(0, 0, 0), "d1": _stats(0, 0, 0)}
    idle = disk_busy(zero, {"d0": _stats(100, 204800, 3000), "d1": _stats(100, 204800, 3000)}, ["d0", "d1"], 10)
    assert idle["d0"]["busy_ratio"] == pytest.approx(0.3) and idle["d0"]["avg_io_bytes"] == 1 << 20
    assert "busy only 30% of the time, the CPU 20%" in diagnose("read", 0.5, desc, idle, 0.2)[0]
    # busy 70 %, pool at 60 % (the emulated lab of 2026-11-26): idle disks named, not "no cause"
    partly = disk_busy(zero, {"d0": _stats(100, 204800, 7000), "d1": _stats(100, 204800, 7000)}, ["d0", "d1"], 10)
    assert "busy only 70%" in diagnose("read", 0.6, desc, partly, None)[0]
    busy = disk_busy(zero, {"d0": _stats(100, 204800, 8000), "d1": _stats(100, 204800, 8000)}, ["d0", "d1"], 10)
    assert diagnose("read", 0.6, desc, busy, None) == [
        "no single cause measured: compare with the raw-disk rates and the pool's latency histograms"]
    assert "CPU busy 95%" in diagnose("read", 0.5, desc, idle, 0.95)[0]
    lopsided = disk_busy(zero, {"d0": _stats(1000, 2048000, 9500), "d1": _stats(10, 20480, 9500)}, ["d0", "d1"], 10)
    assert any("unbalanced" in r for r in diagnose("read", 0.5, desc, lopsided, 0.2))
    small = disk_busy(zero, {"d0": _stats(10000, 80000, 9800), "d1": _stats(10000, 80000, 9800)}, ["d0", "d1"], 10)
    assert any("4 KiB I/Os" in r for r in diagnose("write", 0.5, desc, small, 0.2))
    assert "nothing is lost" in diagnose("write", 0.95, desc, small, 0.2)[0]


def test_where_a_reader_parts_from_the_disks():
    desc = layout(*[("disk", 1, None)] * 2)
    zero = {"d0": _stats(0, 0, 0), "d1": _stats(0, 0, 0)}
    idle = disk_busy(zero, {"d0": _stats(100, 204800, 3000), "d1": _stats(100, 204800, 3000)}, ["d0", "d1"], 10)
    # the lab's stripe of four: the disks gave the layout, the reader 38 % of it
    wasted = diagnose("read", 1.02, desc, idle, 0.4, disk_bytes_per_byte=2.66, reader_ratio=0.38)
    assert wasted[0] == "the pool gives 102% of what its layout should at the disks: nothing is lost there"
    assert wasted[1].startswith("the reader got 38% of the layout's rate: the disks read 2.7x the bytes it got")
    assert diagnose("read", 1.02, desc, idle, 0.4, 1.1, 0.95) == [wasted[0]]
    assert diagnose("write", 0.95, desc, idle, 0.4, 2.0, 0.95) == [  # a mirror's copies, not waste
        "the pool gives 95% of what its layout should: nothing is lost"]
    # reads from memory are named: the pool's rate, taken at the disks, is then low
    short = diagnose("read", 0.5, desc, idle, 0.3, 0.6, 0.83)
    assert "busy only 30%" in short[0] and "the disks read only 60% of the bytes the reader got" in short[-1]


def test_a_run_that_moved_a_record_or_two_is_not_a_measurement():
    # the lab's short read (tests/fixtures/efficiency/PROVENANCE.md): 141,852 B/s over 7.4 s, one record
    said = too_little_moved(141_852 * 7.4, 7.4)
    assert said is not None and said.startswith("not a measurement of the pool: fio moved only 1.0 MiB in 7.4 s")
    assert "--budget" in said
    assert too_little_moved(15 << 20, 5.0) is not None
    assert too_little_moved(16 << 20, 5.0) is None  # sixteen 1 MiB records: a pace, not a start
    assert too_little_moved(49e6 * 5, 5.0) is None  # the same command's other runs: 47-51 MB/s


# Recorded in the lab under fio load (tests/fixtures/hosts/PROVENANCE.md): txgs 75-172
# committed, 173 syncing, 174 open.
TXGS = Path(__file__).parents[1] / "fixtures/hosts/2.3.2/near-full/load/proc/spl/kstat/zfs/tank/txgs"


def test_the_txgs_a_run_committed_are_those_after_the_last_committed_before_it():
    after = parse_txgs(TXGS.read_text())
    # the kstat as it read a few seconds earlier: 170 syncing, 171 open, 172 not born yet
    state = {170: "syncing", 171: "open"}
    before = [t.model_copy(update={"state": state.get(t.txg, t.state)}) for t in after if t.txg <= 171]
    done = [t for t in after if t.txg in (170, 171, 172)]
    during = txgs_during(before, after)
    assert during is not None and during.count == 3
    assert during.dirty_bytes_mean == pytest.approx(sum(t.dirty_bytes for t in done) / 3)
    assert during.sync_seconds == pytest.approx(sum(t.sync_seconds for t in done)) == pytest.approx(5.22, abs=0.01)
    assert during.sync_bytes_per_second == pytest.approx(sum(t.dirty_bytes for t in done) / during.sync_seconds)
    assert txgs_during(after, after) is None  # nothing committed in between
    assert txgs_during([], []) is None  # zfs_txg_history = 0: no rows


def test_idle_disks_behind_small_txgs_are_named_with_the_tunables_that_size_them():
    desc = layout(*[("disk", 1, None)] * 2)
    zero = {"d0": _stats(0, 0, 0), "d1": _stats(0, 0, 0)}
    idle = disk_busy(zero, {"d0": _stats(100, 204800, 6800), "d1": _stats(100, 204800, 6800)}, ["d0", "d1"], 10)
    # the lab's stripe of four under a 64 MiB ARC cap: 9 txgs of 32 MiB in 8.4 s
    small = TxgsDuring(count=9, dirty_bytes_mean=33.7e6, sync_seconds=7.0)
    reasons = diagnose("write", 0.77, desc, idle, 0.35, 1.0, None, small, 8.4)
    assert "busy only 68%" in reasons[0]
    assert reasons[1].startswith("the writes went out in 9 transaction groups of 32 MiB, one every 0.9 s")
    assert "zfs_dirty_data_sync_percent" in reasons[1] and "arc_tempreserve_space()" in reasons[1]
    assert len(diagnose("write", 0.77, desc, idle, 0.35, 1.0, None, None, 8.4)) == 1  # no txg history
    assert len(diagnose("write", 0.77, desc, idle, 0.35, 1.0, None, small.model_copy(update={"count": 1}), 8.4)) == 1
    assert len(diagnose("read", 0.77, desc, idle, 0.35, 1.0, 0.77, small, 8.4)) == 1  # reads: not the txgs


def test_a_write_that_syncs_at_the_layouts_rate_is_told_from_its_start():
    """The lab's stripe of four, 4 x 64 MiB with the ARC uncapped (2026-11-26): 4 txgs of 273 MB
    synced in 7.36 s (37.1 MB/s, 93 % of 40), the first one open 0.97 s before anything synced,
    so the writer saw 82 %. The report names the rate while syncing and the time no txg synced."""
    desc = layout(*[("disk", 1, None)] * 4)
    zero = {f"d{i}": _stats(0, 0, 0) for i in range(4)}
    busy = disk_busy(zero, {f"d{i}": _stats(100, 140000, 7000) for i in range(4)}, list(zero), 8.3)
    txgs = TxgsDuring(count=4, dirty_bytes_mean=273.2e6 / 4, sync_seconds=7.36, sync_bytes_per_second=37.1e6)
    reasons = diagnose("write", 0.82, desc, busy, 0.4, 1.0, None, txgs, 8.3, 37.1e6 / 40e6)
    assert reasons[0].startswith("while its 4 transaction groups synced (7.4 s of the 8.3 s) the pool wrote 93% "
                                 "of what its layout should; for the other 0.9 s no txg was syncing")
    assert "zfs_dirty_data_sync_percent" in reasons[0] and "zfs_txg_timeout" in reasons[0]
    # without a txg history, or for reads, nothing is said of syncing
    assert not any("synced" in r for r in diagnose("write", 0.82, desc, busy, 0.4, 1.0, None, None, 8.3, None))
    assert not any("synced" in r for r in diagnose("read", 0.82, desc, busy, 0.4, 1.0, 0.8, txgs, 8.3, 0.93))
    # With the disks idle half the time (io_ticks undercounts these writes: docs/probes.md), syncs
    # at the layout's rate still leave the time outside them as the one cause; slow syncs do not.
    idle = disk_busy(zero, {f"d{i}": _stats(100, 140000, 4000) for i in range(4)}, list(zero), 8.3)
    at_layout = diagnose("write", 0.82, desc, idle, 0.4, 1.0, None, txgs, 8.3, 0.93)
    assert len(at_layout) == 1 and at_layout[0].startswith("while its 4 transaction groups synced")
    slow = diagnose("write", 0.6, desc, idle, 0.4, 1.0, None, txgs, 8.3, 0.62)
    assert "wrote 62% of what its layout should" in slow[0]
    assert "busy only 48%" in slow[1] and slow[2].startswith("the writes went out in 4 transaction groups of 65 MiB")
    # and a write that reaches its layout needs no reasons
    assert diagnose("write", 0.9, desc, busy, 0.4, 1.0, None, txgs, 8.3, 0.93) == [
        "the pool gives 90% of what its layout should: nothing is lost"]


def test_writes_stream_in_parallel_and_the_read_is_one_stream_over_all_of_it():
    write = efficiency_job("/tank/s", "write", 64 << 20, 4, 10)
    assert "numjobs=4" in write and f"size={64 << 20}" in write and "rw=write" in write and "time_based" not in write
    read = efficiency_job("/tank/s", "read", 64 << 20, 4, 10)
    assert "numjobs=1" in read and f"size={256 << 20}" in read and "runtime=10" in read and "create_only" not in read
    assert "time_based=1" in read
    once = efficiency_job("/tank/s", "read", 64 << 20, 4, 10, one_pass=True)  # the ARC not capped
    assert "time_based" not in once and "runtime=10" in once and f"size={256 << 20}" in once
    layout_only = efficiency_job("/tank/s", "read", 64 << 20, 4, 10, create_only=True)
    assert "create_only=1" in layout_only and "runtime" not in layout_only
    # the same [section] name, so the read finds the file its layout wrote
    assert layout_only.split("\n\n")[1] == read.split("\n\n")[1] == "[seq-read]\nrw=read\n"


def test_arc_hit_ratio_between_two_counter_readings():
    assert arc_hit_ratio((10, 90), (40, 160)) == pytest.approx(0.3)
    assert arc_hit_ratio((10, 90), (10, 90)) is None  # no demand reads
    assert arc_hit_ratio(None, (1, 1)) is None
