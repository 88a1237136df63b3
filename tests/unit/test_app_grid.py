"""tests/lab/app_grid.py's and labapps.py's pure parts: the run order, the throttles of a layout
scaled for the applications, the applications' own reports read back."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
import app_grid  # noqa: E402 - after the sys.path line above
import labapps  # noqa: E402 - after the sys.path line above
import lablayouts  # noqa: E402 - after the sys.path line above


def test_repeats_run_forward_then_backward():
    order = app_grid.interleaved(["8K", "32K", "128K"], 3)
    assert order == [(1, "8K"), (1, "32K"), (1, "128K"), (2, "128K"), (2, "32K"), (2, "8K"),
                     (3, "8K"), (3, "32K"), (3, "128K")]
    # over two repeats every recordsize has the same mean position: a drift of the host falls on none
    positions: dict[str, list[int]] = {}
    for i, (_, rs) in enumerate(app_grid.interleaved(["8K", "32K", "128K"], 2)):
        positions.setdefault(rs, []).append(i)
    assert {sum(p) for p in positions.values()} == {5}


def test_a_scaled_layout_throttles_every_disk_and_keeps_the_rest():
    layout = lablayouts.get("ssd-mirror2x2")
    slower = app_grid.scaled(layout, 0.1)
    assert [(d.iops, d.bps) for d in slower.disks] == [(150, 20_000_000)] * 4
    assert slower.zpool_create_argv() == layout.zpool_create_argv()
    assert [d.media for d in slower.disks] == [d.media for d in layout.disks]
    assert app_grid.scaled(layout, 1) is layout


def test_bytes_per_op_makes_a_large_request_cost_its_size():
    # the SSD profile (1,500 IOPS, 200 MB/s) scaled by 0.01: 15 IOPS, and MB/s = 15 x 16 KiB, so a
    # 128K request takes eight operations' worth of the byte budget
    ssd = app_grid.scaled(lablayouts.get("ssd-mirror2x2"), 0.01, 16384)
    assert [(d.iops, d.bps) for d in ssd.disks] == [(15, 15 * 16384)] * 4


@pytest.mark.parametrize("app", sorted(labapps.APPS))
def test_each_app_has_its_dataset_per_recordsize(app):
    a = labapps.APPS[app]
    s = labapps.Settings()
    ds = labapps.dataset(a, "8K")
    assert ds.startswith("tank/apps/") and ds != labapps.dataset(a, "128K")
    script = labapps.copy_onto(a, "8K", s)
    assert "recordsize=8K" in script and f"compression={s.compression}" in script
    assert (f"{labapps.SOURCE}/{a.source}/." in script) == a.data_on_dataset


def _load(busy: float, guest: float, host: float | None = None):
    import appevidence
    return appevidence.CellLoad(45.0, {"sda": busy / 2, "sdb": busy}, guest, 0.0, host)


@pytest.mark.parametrize(("busy", "guest", "host", "bound"), [
    (0.95, 0.40, 0.50, "storage"),  # the disks busy, the CPUs not: the storage set the pace
    (0.30, 0.97, 0.60, "cpu"),  # the application saturated the emulated CPU, the disks idle 70 %
    (0.30, 0.50, 0.95, "cpu"),  # the host's other work slowed the emulation: still not the storage
    (0.95, 0.95, None, "unclear"),  # both near saturation
    (0.50, 0.50, 0.50, "unclear"),  # neither: latency or a lock
])
def test_a_run_is_storage_bound_only_with_busy_disks_and_a_cpu_to_spare(busy, guest, host, bound):
    import appevidence
    verdict, why = appevidence.verdict(_load(busy, guest, host))
    assert verdict == bound
    assert f"busiest disk sdb {busy:.0%} busy" in why


def test_a_recorded_pgbench_run_reads_back_as_neither_disk_nor_cpu_bound():
    """A real run (tests/fixtures/apps/pgbench-tpcb-8K): 27.4 tps with the four disks 37-42 % busy
    and the guest's CPU 77 %: nothing saturated, so the run is no evidence of the storage's pace."""
    import appevidence

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "apps" / "pgbench-tpcb-8K"
    before, after = (appevidence.parse_reading((fixture / f).read_text()) for f in ("before.txt", "after.txt"))
    load = appevidence.cell_load(before, after, ["sda", "sdb", "sdc", "sdd"])
    assert 46 < load.seconds < 47
    assert load.busiest == ("sda", pytest.approx(0.417, abs=0.001))
    assert set(load.disks_busy) == {"sda", "sdb", "sdc", "sdd"} and load.mean_disk_busy < load.busiest[1]
    assert load.cpu_busy == pytest.approx(0.772, abs=0.001) and load.cpu_steal == 0
    assert appevidence.verdict(load)[0] == "unclear"
    assert labapps.parse_pgbench((fixture / "pgbench.out").read_text()) == pytest.approx(27.406017)


def test_the_same_recorded_run_completed_its_disks_throttled_iops_while_io_ticks_said_two_fifths_busy():
    """That run's disks were throttled to 30 IOPS: each completed 34.8-36.3 reads and writes a
    second (qemu's bucket lets a little above the limit through), at its limit, while io_ticks said
    37-42 % busy; the lab keeps both (docs/apps.md, "Throttles")."""
    import appevidence

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "apps" / "pgbench-tpcb-8K"
    before, after = (appevidence.parse_reading((fixture / f).read_text()) for f in ("before.txt", "after.txt"))
    load = appevidence.cell_load(before, after, ["sda", "sdb", "sdc", "sdd"])
    assert set(load.disks_ops) == set(load.disks_busy)
    assert all(34.5 < ops < 36.5 for ops in load.disks_ops.values()), load.disks_ops


def test_a_reading_without_its_parts_is_refused():
    import appevidence
    with pytest.raises(ValueError, match="CLOCK, DISKSTATS"):
        appevidence.parse_reading("@@STAT\ncpu  1 2 3 4 5 6 7 8 0 0\n")
    with pytest.raises(ValueError, match="no tps line"):
        labapps.parse_pgbench("pgbench: error: connection to server failed")


def test_a_throttle_change_at_run_time_is_the_command_lines_total_limits():
    import labqmp
    cmd = labqmp.throttle_command("d2", 15, 2_000_000)
    assert cmd["execute"] == "block_set_io_throttle"
    assert cmd["arguments"] == {"device": "d2", "iops": 15, "bps": 2_000_000,
                                "bps_rd": 0, "bps_wr": 0, "iops_rd": 0, "iops_wr": 0}
    assert labqmp.throttle_command("d0", None, None)["arguments"]["iops"] == 0  # an unthrottled disk: no limit


def test_throttles_and_recordsizes_interleave_as_one_list_of_cells():
    cells = [(f, rs) for f in (0.02, 0.01) for rs in ("8K", "128K")]
    order = [c for _, c in app_grid.interleaved(cells, 2)]
    assert order[:4] == cells and order[4:] == cells[::-1]


def test_synchronous_commit_off_reaches_the_server_only_when_asked():
    on, off = labapps.Settings(), labapps.Settings(synchronous_commit="off")
    assert "synchronous_commit" not in labapps._pg_start("/tank/apps/pg-8K", on)
    assert "-o '-c synchronous_commit=off'" in labapps._pg_start("/tank/apps/pg-8K", off)


def _fixture_load(name: str):
    import appevidence

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "apps" / name
    before, after = (appevidence.parse_reading((fixture / f).read_text()) for f in ("before.txt", "after.txt"))
    return appevidence.cell_load(before, after, ["sda", "sdb", "sdc", "sdd"]), (fixture / "pgbench.out").read_text()


def test_the_recorded_storage_paced_run_held_its_disks_at_their_7_iops_with_the_guest_half_idle():
    """tests/fixtures/apps/pgbench-tpcb-8K-syncoff-7iops-storage: every disk at its throttle
    (7 IOPS), the guest's CPU about half busy; io_ticks still under the verdict's 80 %."""
    import appevidence

    load, report = _fixture_load("pgbench-tpcb-8K-syncoff-7iops-storage")
    assert all(7.0 <= ops < 7.8 for ops in load.disks_ops.values()), load.disks_ops
    assert load.cpu_busy == pytest.approx(0.53, abs=0.01)
    assert min(load.disks_busy.values()) > 0.64 and max(load.disks_busy.values()) < 0.70
    assert appevidence.verdict(load)[0] == "unclear"  # the guest's counters alone: neither saturated
    assert labapps.parse_pgbench(report) == pytest.approx(9.116)


def test_the_recorded_cpu_heavy_run_left_its_disks_below_their_30_iops():
    """tests/fixtures/apps/pgbench-tpcb-8K-c16-30iops-cpu: 16 clients at 30 IOPS, the disks at
    80-87 % of their throttle and the guest's CPU 83 % (the host's, 100 %, is in the grid's CSV)."""
    load, report = _fixture_load("pgbench-tpcb-8K-c16-30iops-cpu")
    assert all(24 < ops < 26.5 for ops in load.disks_ops.values()), load.disks_ops
    assert load.cpu_busy == pytest.approx(0.835, abs=0.01)
    assert labapps.parse_pgbench(report) == pytest.approx(20.070069)


@pytest.mark.parametrize("app", [a for a in sorted(labapps.APPS) if labapps.APPS[a].data_on_dataset])
def test_a_fresh_copy_replaces_the_recordsizes_dataset_before_copying(app):
    a, s = labapps.APPS[app], labapps.Settings()
    script = labapps.fresh_copy(a, "16K", s)
    destroy, copy = script.index(f"zfs destroy -r {labapps.dataset(a, '16K')}"), script.index("cp -a")
    assert destroy < copy and "recordsize=16K" in script


def test_each_database_keeps_its_own_cache_below_the_arc_and_the_file_work_none():
    s = labapps.Settings(pg_shared_buffers_mib=32, innodb_buffer_pool_mib=24)
    assert labapps.cache_bytes(labapps.APPS["pgbench-tpcb"], s) == 32 << 20
    assert labapps.cache_bytes(labapps.APPS["mariadb-oltp"], s) == 24 << 20
    assert labapps.cache_bytes(labapps.APPS["borg"], s) == 0
    assert "innodb_buffer_pool_size = 24M" in labapps._my_conf("/tank/apps/my-8K", s)


def test_the_fio_cell_runs_the_probes_own_job_on_the_copy_and_reads_its_iops():
    """The fio 'application' is the profile's probe job as a probe renders it, on the run's dataset;
    its metric is every job's reads and writes a second, read from a real fio report
    (tests/fixtures/fio/host-ext4/postgres.json)."""
    import json

    s = labapps.Settings(seconds=30)
    script = labapps.APPS["fio-postgres"].run("/tank/apps/fio-postgres-8K", s)
    assert "directory=/tank/apps/fio-postgres-8K" in script and "runtime=30" in script
    assert "rw=randrw" in script and "bs=8K" in script and "create_only" not in script
    assert "create_only=1" in labapps.APPS["fio-postgres"].setup(s)
    report = (Path(__file__).resolve().parents[1] / "fixtures" / "fio" / "host-ext4" / "postgres.json").read_text()
    jobs = json.loads(report)["jobs"]
    assert labapps.parse_fio("fio: a warning first\n" + report) == pytest.approx(
        sum(j["read"]["iops"] + j["write"]["iops"] for j in jobs))
    with pytest.raises(ValueError, match="no JSON"):
        labapps.parse_fio("fio: failed to open /tank/x")


def test_a_separate_wal_moves_pg_wal_onto_a_128k_child_after_the_data_copy():
    """--pg-wal separate: the copy's pg_wal moved to tank/apps/pg-<rs>/wal (recordsize 128K, the run's
    compression) and linked back, postgres's and 0700 as initdb leaves it; the other apps untouched."""
    s = labapps.Settings(pg_wal="separate", compression="lz4")
    pg = labapps.APPS["pgbench-select"]
    script = labapps.fresh_copy(pg, "8K", s)
    steps = script.split(" && ")
    at = {step: i for i, step in enumerate(steps)}
    data_copy = at[f"cp -a {labapps.SOURCE}/pg/. /tank/apps/pg-8K/"]
    child = at["zfs create -o recordsize=128K -o compression=lz4 tank/apps/pg-8K/wal"]
    moved = at["cp -a /tank/apps/pg-8K/data/pg_wal/. /tank/apps/pg-8K/wal/"]
    removed = at["rm -rf /tank/apps/pg-8K/data/pg_wal"]
    linked = at["ln -s /tank/apps/pg-8K/wal /tank/apps/pg-8K/data/pg_wal"]
    assert data_copy < child < moved < removed < linked < at["chmod 0700 /tank/apps/pg-8K/wal"]
    assert "chown postgres:postgres /tank/apps/pg-8K/wal" in steps
    assert script.startswith("zfs destroy -r tank/apps/pg-8K ")  # -r: the WAL's child goes with it
    assert labapps.run_datasets(pg, "8K", s) == ["tank/apps/pg-8K", "tank/apps/pg-8K/wal"]
    for other in ("mariadb-oltp", "fio-postgres"):
        assert "/wal" not in labapps.fresh_copy(labapps.APPS[other], "8K", s)
        assert labapps.run_datasets(labapps.APPS[other], "8K", s) == [labapps.dataset(labapps.APPS[other], "8K")]
    same = labapps.Settings()
    assert "pg_wal" not in labapps.fresh_copy(pg, "8K", same)
    assert labapps.run_datasets(pg, "8K", same) == ["tank/apps/pg-8K"]


def test_rows_are_not_appended_to_a_grid_of_other_columns(tmp_path):
    """A committed grid older than the pg_wal column: a new row would land beside its header."""
    old = Path(__file__).resolve().parents[1] / "lab" / "apps-data" / "pgbench-ssd-mirror2x2-zfs2.3.csv"
    why = app_grid.header_mismatch(old)
    assert why is not None and "pg_wal" in why and "new --out" in why
    new = tmp_path / "grid.csv"
    assert app_grid.header_mismatch(new) is None
    app_grid.append_rows(new, [{"app": "pgbench-tpcb", "pg_wal": "separate"}])
    assert app_grid.header_mismatch(new) is None


def test_the_wal_option_takes_only_its_choices(capsys):
    with pytest.raises(SystemExit) as exit_:
        app_grid.main(["--pg-wal", "apart"])  # refused while the arguments are parsed: nothing booted
    assert exit_.value.code == 2
    assert "choose from 'same', 'separate'" in capsys.readouterr().err


@pytest.mark.parametrize(("tree_mib", "files"), [(256, 4), (512, 8), (16, 1)])
def test_the_tree_holds_half_its_mib_in_32_mib_random_files(tree_mib, files):
    script = labapps._tree_setup(labapps.Settings(tree_mib=tree_mib))
    assert f"for i in $(seq {files}); do head -c 32M /dev/urandom" in script


def test_tree_mib_is_refused_below_one_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as exit_:
        app_grid.main(["--apps", "copy", "--tree-mib", "0", "--layouts", "no-such-layout"])  # never a boot
    assert exit_.value.code == 2 and "--tree-mib: a number of MiB, 1 or more, not 0" in capsys.readouterr().err


def test_media_read_reads_each_file_whole_and_its_parser_reads_dds_reports():
    """The measured command as rendered, and its output recorded on the development host
    (tests/fixtures/apps/media-read-dd-host: dd 9.1 reading 4 x 48 MiB; page-cache speeds there,
    only the format matters): MB/s over all the files, their bytes over dd's seconds."""
    app, s = labapps.APPS["media-read"], labapps.Settings()
    assert (app.metric, app.higher_is_better, app.data_on_dataset) == ("MB/s", True, True)
    assert "for i in $(seq 4); do head -c 48M /dev/urandom > /tank/appsrc/media/media-$i.bin" in app.setup(s)
    assert "head -c 128M" in app.setup(labapps.Settings(media_mib=512))
    assert app.run("/tank/apps/media-1M", s) == (
        '( for f in /tank/apps/media-1M/media-*.bin; do LC_ALL=C dd if="$f" of=/dev/null bs=1M || exit 1; done )')
    assert f"cp -a {labapps.SOURCE}/media/. /tank/apps/media-1M/" in labapps.fresh_copy(app, "1M", s)
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "apps" / "media-read-dd-host"
    out = (fixture / "dd.out").read_text()
    seconds = 0.0114689 + 0.00888642 + 0.00698596 + 0.00879671  # the four reports' times
    assert labapps.parse_media_read(out) == pytest.approx(4 * 50_331_648 / seconds / 1e6)
    with pytest.raises(ValueError, match="0 dd 'bytes ... copied' lines, not 4"):
        labapps.parse_media_read((fixture / "missing.out").read_text())
    three = out.split("48+0 records in\n", 2)  # a file short: refused, not read as a slower pool
    with pytest.raises(ValueError, match="3 dd"):
        labapps.parse_media_read("48+0 records in\n".join(three[:1] + three[2:]))


def test_media_mib_is_refused_below_one_mib_a_file(capsys):
    with pytest.raises(SystemExit) as exit_:
        app_grid.main(["--apps", "media-read", "--media-mib", "3", "--layouts", "no-such-layout"])  # never a boot
    assert exit_.value.code == 2 and "--media-mib: a number of MiB, 4 or more (one a file), not 3" in capsys.readouterr().err


def test_the_direct_variant_of_the_mysql_job_is_the_probes_job_with_o_direct():
    """fio-mysql-direct: the profile's job as a probe renders it, with direct=1 in [global] (O_DIRECT,
    as MariaDB opens its data files); the probe's own job stays buffered."""
    s = labapps.Settings(seconds=30)
    plain = labapps.APPS["fio-mysql"].run("/tank/apps/fio-mysql-16K", s)
    direct = labapps.APPS["fio-mysql-direct"].run("/tank/apps/fio-mysql-16K", s)
    assert "direct=1" not in plain
    assert direct == plain.replace("[global]\n", "[global]\ndirect=1\n", 1) != plain
    assert labapps.dataset(labapps.APPS["fio-mysql-direct"], "16K") == labapps.dataset(labapps.APPS["fio-mysql"], "16K")


def test_the_fio_reports_are_read_in_iops_and_in_mb_per_s():
    """A recorded run of the probe's job in the lab (tests/lab/apps-data/runs/...): its report read
    as reads and writes a second (fio-postgres, fio-mysql) and as MB/s (fio-fileserver)."""
    import json

    from advisor.host.run_readings import parse_run
    run = Path(__file__).resolve().parents[2] / "tests/lab/apps-data/runs/pgbench-fio-ssd-mirror2x2-zfs2.3" / \
        "fio-postgres-8K-x0.005-c8-1.txt"
    _, _, report = parse_run(run.read_text())
    jobs = json.loads(report[report.index("{"):])["jobs"]
    assert labapps.parse_fio(report) == pytest.approx(sum(j["read"]["iops"] + j["write"]["iops"] for j in jobs))
    mb = labapps.parse_fio_bandwidth(report)
    assert mb == pytest.approx(sum(j["read"]["bw_bytes"] + j["write"]["bw_bytes"] for j in jobs) / 1e6) and mb > 0
    assert labapps.APPS["fio-fileserver"].metric == "MB/s" and labapps.APPS["fio-fileserver"].parse is labapps.parse_fio_bandwidth


@pytest.mark.parametrize("size", ["0", "100", "-5", "lots"])
def test_a_request_size_below_a_sector_or_not_a_size_is_refused_before_a_boot(size, capsys):
    with pytest.raises(SystemExit) as exit_:
        app_grid.main(["--bytes-per-op", size, "--layouts", "no-such-layout"])  # never a boot
    assert exit_.value.code == 2 and "--bytes-per-op" in capsys.readouterr().err
