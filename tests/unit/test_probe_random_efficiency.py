"""Small random I/O: what a layout should give from its disks' IOPS, the read-only raw random
baseline, the fio jobs, and the diagnosis of the bottleneck (pure)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.host.threads import ThreadBusy, ThreadCpu, ThreadGroup
from advisor.probe.efficiency_run import EfficiencyReport
from advisor.probe.pool_efficiency import (
    Efficiency,
    TxgsDuring,
    expected_bandwidth,
    layout_rule,
    raw_read_argv,
    raw_read_rates,
)
from advisor.probe.random_efficiency import (
    RandomLevel,
    best_level,
    diagnose_random,
    random_job,
    random_test_name,
    raw_queue_depth,
)

FIO = Path(__file__).parents[1] / "fixtures" / "fio" / "host-ext4"
IOPS = {f"d{i}": 150.0 for i in range(8)}


def layout(*vdevs: tuple[str, int, int | None], ashift: int = 12, physical: int = 4096, logs: int = 0) -> dict:
    out, n = [], 0
    for kind, width, parity in vdevs:
        out.append({"type": kind, "width": width, "nparity": parity, "disks": [f"d{n + i}" for i in range(width)]})
        n += width
    return {"vdevs": out, "ashift": ashift, "logs": [{"type": "disk", "width": 1}] * logs,
            "disks": [{"name": f"d{i}", "physical_block_size": physical} for i in range(n)]}


@pytest.mark.parametrize("desc, read, write", [
    (layout(*[("disk", 1, None)] * 4), 4, 4),  # stripe: vdevs add
    (layout(("mirror", 2, None)), 2, 1),  # a mirror reads from each side, writes every side
    (layout(("mirror", 2, None), ("mirror", 2, None)), 4, 2),  # a stripe of mirrors: both add
    # a raidz vdev: a 4K record at ashift 12 is one data column, different records on different
    # disks: reads keep every member busy, a write costs its column and the parity
    (layout(("raidz1", 4, 1)), 4, 2),
    (layout(("raidz2", 6, 2), ("raidz2", 6, 2)), 12, 4),
    (layout(("raidz2", 5, 2)), 5, 5 / 3),
    # at ashift 9 a 4K record spans the data columns: about one disk's IOPS a vdev (n / (n - p))
    (layout(("raidz1", 4, 1), ashift=9), 4 / 3, 1),
])
def test_expected_iops_by_layout(desc, read, write):
    assert expected_bandwidth(desc, IOPS, "read", "random") == pytest.approx(read * 150)
    assert expected_bandwidth(desc, IOPS, "write", "random") == pytest.approx(write * 150)
    assert layout_rule(desc, "read", "random").endswith(f"= {read:.3g} disk" + ("s" if read != 1 else ""))


def test_sequential_rules_are_unchanged_by_the_random_ones():
    assert expected_bandwidth(layout(("raidz1", 4, 1)), IOPS, "read") == 3 * 150


def test_raw_random_read_is_read_only_deep_and_reads_every_disk_at_once():
    argv = raw_read_argv(["/dev/sdb", "/dev/sdc"], 5, "4k", "randread", 32)
    assert argv.index("--readonly") < argv.index("--name=disk0")
    assert "--rw=randread" in argv and "--iodepth=32" in argv and "--ioengine=libaio" in argv
    assert "--direct=1" in argv and "--bs=4k" in argv
    assert not any("write" in a or "trim" in a for a in argv)
    assert [a for a in argv if a.startswith("--filename=")] == ["--filename=/dev/sdb", "--filename=/dev/sdc"]
    for bad in ({"devices": ["/tank/f"]}, {"pattern": "randwrite"}, {"pattern": "randrw"}, {"iodepth": 0}):
        kwargs = {"devices": ["/dev/sdb"], "pattern": "randread", "iodepth": 32, **bad}
        with pytest.raises(ValueError):
            raw_read_argv(kwargs["devices"], 5, "4k", kwargs["pattern"], kwargs["iodepth"])
    # the sequential baseline stays what it was
    assert raw_read_argv(["/dev/sdb"], 5)[:8] == ["fio", "--readonly", "--rw=read", "--bs=1M", "--direct=1",
                                                  "--ioengine=psync", "--iodepth=1", "--time_based"]


def test_raw_iops_by_device():
    fio = {"jobs": [{"jobname": "disk0", "read": {"iops": 151.2, "bw_bytes": 619315}},
                    {"jobname": "disk1", "read": {"iops": 149.0, "bw_bytes": 610304}}]}
    assert raw_read_rates(fio, ["/dev/sdb", "/dev/sdc"], "iops") == {"/dev/sdb": 151.2, "/dev/sdc": 149.0}


def test_random_jobs_share_one_file_and_async_writes_end_on_the_disks():
    read = random_job("/tank/s", "read", 64 << 20, 16, 5)
    assert "numjobs=16" in read and "filename=random.0" in read and "rw=randread" in read and "bs=4096" in read
    assert "time_based=1" in read and "runtime=5" in read and "sync=1" not in read
    assert "[rand-read-4k]" in read
    sync = random_job("/tank/s", "sync", 64 << 20, 4, 5)
    assert "sync=1" in sync and "rw=randwrite" in sync and "[rand-write-4k-sync]" in sync
    asynchronous = random_job("/tank/s", "async", 64 << 20, 4, 5, write_bytes=16 << 20)
    # a bounded amount, fsynced at the end: the rate includes reaching the disks
    assert "io_size=4194304" in asynchronous and "end_fsync=1" in asynchronous and "time_based" not in asynchronous
    assert "create_only=1" in random_job("/tank/s", "layout", 64 << 20, 1, 5)
    assert [random_test_name(k) for k in ("read", "sync", "async")] == [
        "rand-read-4k", "rand-write-4k-sync", "rand-write-4k-async"]


def level(jobs: int, iops: float, busy: float = 0.5, depth: float = 1.0, io: float = 4096, written: float = 0.0,
          threads: list[tuple[str, float]] = (), cpu: float | None = 0.3, txgs: TxgsDuring | None = None) -> RandomLevel:
    disks = {d: {"busy_ratio": busy, "queue_depth": depth, "avg_io_bytes": io, "written_bytes": written}
             for d in ("d0", "d1")}
    busiest = [ThreadBusy(name=n, tid=100 + i, busy_ratio=r) for i, (n, r) in enumerate(threads)]
    groups = [ThreadGroup(name=n.rstrip("_0123456789"), threads=1, busy_ratio=r, busiest_ratio=r) for n, r in threads]
    return RandomLevel(jobs=jobs, iops=iops, seconds=5.0, disks=disks, cpu_busy_ratio=cpu,
                       threads=ThreadCpu(seconds=5.0, busiest=busiest, groups=groups), txgs=txgs)


def test_best_level_is_the_most_iops():
    levels = [level(1, 140), level(4, 290), level(16, 290)]
    assert best_level(levels).jobs == 16
    assert raw_queue_depth({"a": {"queue_depth": 30.0}, "b": {"queue_depth": 32.0}}) == 31.0


MIRROR = layout(("mirror", 2, None))


def test_disk_bound_reads_say_so_with_busy_time_and_queue_depth():
    notes = diagnose_random("read", 0.97, level(16, 291, busy=0.99, depth=7.8), MIRROR, {}, 31.0)
    assert notes[0] == "97% of what the layout should give at 16 jobs: nothing is lost"
    assert "disk bound: the disks were busy 99% of the time with 7.8 requests in flight on average (4 KiB I/Os)" in notes


def test_throttled_disks_at_their_raw_iops_are_disk_bound_though_busy_half_the_time():
    # the lab's slow-mirror2x2, 16 jobs: 613 IOPS over 4 disks of 153, the disks busy 52 %
    lv = level(16, 613, busy=0.52, depth=3.0)
    for d in lv.disks.values():
        d["ops"] = 153.0 * lv.seconds
    notes = diagnose_random("read", 1.0, lv, MIRROR, {}, 31.0, raw_iops={"d0": 153.0, "d1": 153.0})
    assert ("disk bound: the disks did 153 I/Os a second each, 100% of their raw random reads, were busy 52% of the "
            "time with 3.0 requests in flight on average (4 KiB I/Os)") in notes
    assert not any(n.startswith("disk bound") for n in diagnose_random("read", 1.0, lv, MIRROR, {}, 31.0,
                                                                       raw_iops={"d0": 400.0, "d1": 400.0}))


def test_one_saturated_thread_is_named_though_the_host_looks_idle():
    # many cores: host-wide 12 % busy, but one z_wr_iss thread pegged
    notes = diagnose_random("async", 0.4, level(16, 600, busy=0.3, threads=[("z_wr_iss", 0.97), ("z_wr_int_1", 0.2)],
                                                cpu=0.12), MIRROR, {}, 31.0)
    assert any(n.startswith("CPU bound on z_wr_iss: that thread was 97% busy") for n in notes), notes
    assert not any("host-wide" in n for n in notes)


def test_sync_writes_without_a_slog_name_the_zil_with_the_bytes_written():
    notes = diagnose_random("sync", 0.45, level(4, 68, busy=0.95, written=68 * 5 * 4096 * 1.2), MIRROR, {}, 31.0)
    assert any(n.startswith("sync writes with no SLOG") and "(the disks wrote 2.4 bytes per byte)" in n
               for n in notes), notes
    with_slog = layout(("mirror", 2, None), logs=1)
    assert not any("SLOG" in n for n in diagnose_random("sync", 0.45, level(4, 68), with_slog, {}, 31.0))


def test_async_writes_above_the_layout_are_explained_by_larger_ios_at_the_disks():
    txgs = TxgsDuring(count=3, dirty_bytes_mean=6 << 20, sync_seconds=2.5)
    notes = diagnose_random("async", 12.0, level(16, 1800, busy=0.9, io=96 * 1024, txgs=txgs), MIRROR, {}, 31.0)
    assert notes[0].startswith("12.0x the layout's IOPS at 16 jobs: the disks did 96 KiB I/Os")
    assert "3 txgs synced 2.5 s of the 5.0 s, 6 MiB each" in notes


def test_ashift_below_the_physical_sector_is_named():
    notes = diagnose_random("read", 0.97, level(16, 291), layout(("mirror", 2, None), ashift=9), {}, None)
    assert any(n.startswith("ashift 9 (512 B) is below the disks' 4096 B physical sector") for n in notes)
    assert not any("ashift" in n for n in diagnose_random("read", 0.97, level(16, 291), MIRROR, {}, None))


def test_a_vdev_queue_limit_the_disks_sat_at_is_named_against_the_raw_depth():
    params = {"zfs_vdev_sync_read_max_active": "2"}
    notes = diagnose_random("read", 0.6, level(16, 180, busy=0.8, depth=2.0), MIRROR, params, 31.0)
    assert ("zfs_vdev_sync_read_max_active is 2, below the 31 requests a disk had in flight in the raw baseline: "
            "the pool's disks stayed at 2.0 (zfs(4))") in notes
    # at the layout, or the disks below the limit: not a cause
    assert not any("max_active" in n for n in diagnose_random("read", 0.97, level(16, 291, depth=2.0), MIRROR,
                                                              params, 31.0))
    assert not any("max_active" in n for n in diagnose_random("read", 0.6, level(16, 180, depth=0.5), MIRROR,
                                                              params, 31.0))


def test_idle_disks_short_of_the_layout_are_named():
    notes = diagnose_random("read", 0.5, level(1, 150, busy=0.5, depth=0.5), MIRROR, {}, 31.0)
    assert "the disks were busy only 50% of the time with 0.5 requests in flight at 1 job: the time went elsewhere" in notes


def test_every_result_has_the_common_figures_also_when_stored_before_them():
    stored = {"direction": "write", "measured_bytes_per_second": 9e6, "pool_bytes_per_second": 9e6,
              "expected_bytes_per_second": 1e7, "ratio": 0.9, "expectation": "x", "diagnosis": []}
    old = EfficiencyReport(pool={}, raw_read_bytes_per_second={}, results=[stored], disks={})
    r = old.results[0]
    assert (r.test, r.unit, r.measured, r.expected) == ("seq-write", "bytes/s", 9e6, 1e7)
    assert old.random_results == [] and old.tests == ["sequential"]
    assert Efficiency(**{**stored, "test": "seq-write", "measured": 1.0}).measured == 1.0


def test_the_budget_is_shared_among_the_timed_runs_of_the_parts_asked_for():
    from advisor.probe.probe_service import efficiency_seconds
    assert efficiency_seconds(20, "sequential") == 5  # a quarter, as before the random part
    assert (efficiency_seconds(300, "random"), efficiency_seconds(300, "all")) == (30, 21)


def test_a_groups_runtime_is_its_own_not_its_threads_added_up():
    from advisor.probe.random_run import group_runtime_seconds
    # fio 3.33, 4 jobs of 2 s with group_reporting (tests/fixtures/fio/PROVENANCE.md)
    doc = json.loads((FIO / "random-read-4jobs.json").read_text())
    assert doc["jobs"][0]["job_runtime"] == 8000
    assert group_runtime_seconds(doc) == pytest.approx(2.0, abs=0.01)


def test_the_sequential_diagnosis_names_a_saturated_thread_before_the_host_wide_cpu():
    from advisor.probe.pool_efficiency import diagnose
    threads = ThreadCpu(seconds=5.0, busiest=[ThreadBusy(name="z_wr_iss", tid=7, busy_ratio=0.95)],
                        groups=[ThreadGroup(name="z_wr_iss", threads=2, busy_ratio=1.4, busiest_ratio=0.95)])
    busy = {"d0": {"busy_ratio": 0.5, "avg_io_bytes": 1 << 20, "read_bytes": 0.0}}
    reasons = diagnose("write", 0.5, MIRROR, busy, 0.2, threads=threads)
    assert reasons[0] == ("CPU bound on z_wr_iss: that thread was 95% busy (2 z_wr_iss threads, 1.40 cores in all), "
                          "so the pool waits for it")
    assert not any(r.startswith("CPU busy") for r in diagnose("write", 0.5, MIRROR, busy, 0.9, threads=threads))


def test_sync_writes_above_the_layout_name_the_zils_log_blocks():
    # the lab's slow-mirror2, 16 jobs: 525 sync IOPS on a mirror of 153-IOPS disks, 14 KiB I/Os
    notes = diagnose_random("sync", 3.4, level(16, 525, busy=0.8, io=14 * 1024), MIRROR, {}, 31.0)
    assert notes[0] == ("3.4x the layout's IOPS at 16 jobs: the disks did 14 KiB I/Os, ZFS gathered the small writes "
                        "into larger ones (the ZIL puts concurrent sync writes in one log block), so a disk's "
                        "small-I/O rate does not set the pool's")


def test_a_raw_baseline_the_disks_did_not_set_is_called_a_floor():
    """One emulated CPU (tests/lab/test_scaling_cpu.py): fio asked for 32 requests per disk and the
    disks saw a fraction of one, so their raw rate is the host's, and the layout's figure a floor."""
    notes = diagnose_random("async", 3.97, level(4, 2243, busy=0.09, depth=0.2), MIRROR, {}, 0.4)
    assert any(n.startswith("the raw baseline kept 0.4 requests in flight per disk of the 32 it asked for") and
               "the layout's figure made of it is a floor" in n for n in notes), notes
    # the disks queued what they were given (a throttled or saturated disk): the raw rate is theirs
    assert not any("raw baseline kept" in n for n in diagnose_random("async", 3.97, level(4, 2243), MIRROR, {}, 31.0))
    assert not any("raw baseline kept" in n for n in diagnose_random("read", 0.97, level(16, 291), MIRROR, {}, None))


def test_reads_from_a_subset_of_a_raidz_are_named_and_judged_on_the_disks_that_hold_the_data():
    """The lab's raidz2 of six on a new pool (tests/lab/experiments/data/raidz-start-disks-2026-11-29.csv):
    295 4K reads a second, all from its third and sixth disks, each at its 150 IOPS."""
    desc = layout(("raidz2", 6, 2))
    read = [0, 0, 13963264, 0, 0, 14110720]  # bytes each disk read over 20.1 s
    disks = {f"d{i}": {"busy_ratio": 0.75 if b else 0.0, "queue_depth": 7.0 if b else 0.0, "avg_io_bytes": 4096,
                       "read_bytes": float(b), "ops": b / 4096 * 5.0 / 20.1, "written_bytes": 0.0}
             for i, b in enumerate(read)}
    lvl = RandomLevel(jobs=16, iops=295, seconds=5.0, disks=disks, cpu_busy_ratio=0.3)
    expected = expected_bandwidth(desc, {f"d{i}": 150.0 for i in range(6)}, "read", "random")
    assert expected == 900  # the whole pool's figure: every start class
    notes = diagnose_random("read", 295 / expected, lvl, desc, {}, 31.0, raw_iops={f"d{i}": 150.0 for i in range(6)})
    reached = next(n for n in notes if n.startswith("the reads came from"))
    assert reached.startswith("the reads came from 2 of the 6 disks of a raidz2 of 6 (d2, d5)")
    assert "within a metaslab every block starts on one disk in 3" in reached and "lies on 2 of the 6" in reached
    # the two disks that hold the data were at their raw rate: disk bound, not "the time went elsewhere"
    assert any(n.startswith("disk bound: the disks did 170 I/Os a second each") and n.endswith("(4 KiB I/Os)")
               for n in notes), notes  # the I/O size of the two disks that read, not averaged with four idle ones
    assert not any("the time went elsewhere" in n for n in notes)


def test_reads_from_every_disk_add_no_sentence():
    desc = layout(("raidz1", 4, 1))
    disks = {f"d{i}": {"busy_ratio": 0.5, "queue_depth": 4.0, "avg_io_bytes": 4096, "read_bytes": 1.4e7 + i * 1e5,
                       "ops": 700.0} for i in range(4)}
    lvl = RandomLevel(jobs=16, iops=568, seconds=5.0, disks=disks, cpu_busy_ratio=0.3)
    notes = diagnose_random("read", 0.95, lvl, desc, {}, 31.0, raw_iops={f"d{i}": 150.0 for i in range(4)})
    assert not any(n.startswith("the reads came from") for n in notes)
