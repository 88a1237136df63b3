"""`/recommend`'s answer scored on the application lab's grids (advisor/model/app_grids.py,
advisor/model/app_evaluation.py, `zfs-advisor evaluate --apps`).

The committed grids are tests/lab/apps-data (docs/apps.md, with their PROVENANCE.md); the hand-made
grids below are a few rows written here, whose answer can be worked out on paper.
"""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from advisor.host.run_readings import completed_ops, parse_run, scsi_disks, throttle_shares
from advisor.model.answers import AnswerResult
from advisor.model.app_evaluation import score, summary_line, unanswerable
from advisor.model.app_grids import PACED_SHARE, load_grids
from advisor.model.dataset import load_csv, samples
from support import REPO
from support.app_grid_rows import write_grid

GRIDS = REPO / "tests" / "lab" / "apps-data"
KEY = ("zfs_version", "layout", "app", "disk_iops", "disk_bps", "clients", "synchronous_commit", "compression")
LAST_LINE = re.compile(r"apps: (\d+) cells, 0 probes median (\d+\.\d) %, worst (\d+\.\d) %; "
                       r"2 probes worst (\d+\.\d) %; harm (\d+)"
                       r"(?:; unmeasured (\d+) \(answers at a recordsize the cell did not run\))?")


# the committed cells the storage paced (grid, app, disk IOPS) -> whether they rank their recordsizes
RANKS = {("pgbench-syncoff-ssd-mirror2x2", "pgbench-tpcb", 7): True,
         ("pgbench-syncoff-ssd-mirror2x2", "pgbench-tpcb", 15): False,
         ("pgbench-select-ssd-mirror2x2", "pgbench-select", 7): False,
         ("pgbench-select-fio-ssd-mirror2x2", "pgbench-select", 7): False,  # fresh copies, three repeats
         ("pgbench-fio-ssd-mirror2x2", "pgbench-tpcb", 7): False,
         ("mariadb-fio-ssd-mirror2x2", "mariadb-oltp", 7): False,
         ("pgbench-synccommit-ssd-mirror2x2", "pgbench-tpcb", 7): False,  # one repeat: no noise to tell
         ("pgbench-walapart-ssd-mirror2x2", "pgbench-tpcb", 7): True,  # repeats 1 % apart
         ("pgbench-fio-hdd-mirror2x2", "pgbench-tpcb", 7): False,
         ("pgbench-fio-hdd-raidz1x4", "pgbench-tpcb", 7): True,
         ("pgbench-fio-4k-hdd-raidz1x4", "pgbench-tpcb", 7): False,
         ("mariadb-fio-hdd-mirror2x2", "mariadb-oltp", 7): True,
         ("mariadb-fio-hdd-raidz1x4", "mariadb-oltp", 7): False,
         ("files-slow-ssd-mirror2x2", "copy", 15): True,
         ("files-slow-ssd-mirror2x2", "media-read", 15): False}


@pytest.fixture(scope="module")
def committed():
    return load_grids(GRIDS)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_every_committed_row_is_in_exactly_one_cell_of_its_grid_and_key(committed):
    for path in sorted(GRIDS.glob("*.csv")):
        cells = [c for c in committed if c.grid == path.stem]
        rows = _rows(path)
        assert sum(len(c.runs) for c in cells) == len(rows)
        keys = [tuple(str(getattr(c, k)) for k in KEY) for c in cells]
        assert len(set(keys)) == len(keys)  # one cell per key within a grid
        for row in rows:
            owners = [c for c in cells if all(row.get(k) in (None, "", str(getattr(c, k))) for k in KEY)
                      and any(r.position == int(row["position"]) for r in c.runs)]
            assert len(owners) == 1, (path.name, row["position"])


def test_the_throttle_grid_splits_by_throttle_and_clients(committed):
    throttles = [c for c in committed if c.grid == "pgbench-throttles-ssd-mirror2x2-zfs2.3"]
    assert sorted((c.disk_iops, c.clients) for c in throttles) == [(15, "16"), (15, "8"), (30, "16"), (30, "8")]
    assert all(list(c.values()) == ["8K"] and len(c.values()["8K"]) == 2 for c in throttles)


def test_the_committed_cells_the_storage_paced(committed):
    """The synchronous_commit=off cells (disks at their throttle, tps following it), the select-only
    cell (at its throttle, run at one throttle only) and pgbench beside the fio job at 7 IOPS are
    scored; the first grid recorded no disk operations, the throttle grid measured one recordsize,
    pgbench at 1,500 IOPS kept its disks at 2-3 % of their throttle.  The probe's own fio job is
    scored for fidelity, not as an application (tests/unit/test_same_pace.py)."""
    scored = {(c.grid.removesuffix("-zfs2.3"), c.app, c.disk_iops) for c in committed
              if c.scored and not c.app.startswith("fio-")}
    assert scored == set(RANKS)
    # at 75 IOPS the copy and the backup kept their disks a tenth to two fifths busy: the emulated CPU
    # set their pace; at 15 the copy and the read back of large files ran at the disks' limit
    assert not [c for c in committed if c.app in ("copy", "borg") and c.scored and c.disk_iops == 75]
    # with --bytes-per-op 16K two runs of each cell reached 87-88 % of the disks' byte budget: not scored
    assert not [c for c in committed if c.grid.startswith("pgbench-fio-ssdcost") and c.scored]
    for c in committed:
        if c.scored:
            assert all(r.disk_ops is not None and r.disk_ops >= PACED_SHARE * c.disk_iops for r in c.runs), c.name
            assert all(r.ops_from == "raw readings" for r in c.runs)  # the runs' own readings where they exist
    why = {(c.grid, c.disk_iops, c.clients): c.why for c in committed if not c.scored}
    assert "not recorded" in why[("pgbench-ssd-mirror2x2-zfs2.3", 30, "8")]
    assert all(w.startswith("one recordsize") for (g, _, _), w in why.items() if g.startswith("pgbench-throttles"))
    assert "below 90 %" in why[("pgbench-throttles-ssd-mirror2x2-zfs2.3", 30, "16")]
    select = next(c for c in committed if c.app == "pgbench-select")
    assert "not run at another throttle" in select.why


def test_which_committed_cells_rank_their_recordsizes(committed):
    """At 7 IOPS with synchronous_commit=off the recordsizes differ beyond their repeats; at 15 IOPS
    the two passes differ by more, select-only's repeats spread by up to 67 %, and beside the fio
    job (a fresh copy of the data before every run) 8K and 128K differ by 0.34 tps, repeats by 0.57."""
    ranks = {(c.grid.removesuffix("-zfs2.3"), c.app, c.disk_iops): c.ranks() for c in committed
             if c.scored and not c.app.startswith("fio-")}
    assert ranks == RANKS


def test_a_run_without_raw_readings_is_read_from_its_disk_ops_max_column(tmp_path, committed):
    shutil.copy(GRIDS / "pgbench-select-ssd-mirror2x2-zfs2.3.csv", tmp_path)
    [cell] = load_grids(tmp_path)
    assert {r.ops_from for r in cell.runs} == {"disk_ops_max"} and cell.scored
    raw = next(c for c in committed if c.app == "pgbench-select")
    assert [r.position for r in cell.runs] == [r.position for r in raw.runs]


def _write(path: Path, rows: list[tuple], metric: str = "tps", higher: int = 1, app: str = "pgbench-tpcb",
           layout: str = "ssd-mirror2x2") -> Path:
    """A grid of hand-made rows (recordsize, value, disk IOPS throttle, disk ops/s) of one app."""
    return write_grid(path, [(app, *r) for r in rows], metric, higher, layout)


def _answer(current: str, final: str, status: str, budget: int = 0) -> AnswerResult:
    return AnswerResult(cell="zfs2.3.2/ssd-mirror2x2/postgres/512M", budget=budget, start="default",
                        current=f"{current},lz4", final=f"{final},lz4", statuses={"recordsize": status}, probed=[],
                        vs_best=None, vs_current=None, p99_vs_default=None, harm=False, loss=False)


def test_a_disk_below_its_throttle_or_a_metric_deaf_to_it_leaves_the_cell_unscored(tmp_path):
    _write(tmp_path / "slow.csv", [("8K", 9.0, 10, 9.5), ("128K", 10.0, 10, 8.5)])  # 8.5 < 90 % of 10
    [slow] = load_grids(tmp_path)
    assert not slow.scored and "below 90 %" in slow.why
    (tmp_path / "slow.csv").unlink()
    # the same cell at 20 IOPS, faster at 8K but not at 128K: the metric did not follow the throttle
    _write(tmp_path / "deaf.csv", [("8K", 9.0, 10, 10.0), ("128K", 10.0, 10, 10.0),
                                   ("8K", 18.0, 20, 20.0), ("128K", 10.0, 20, 20.0)])
    assert [(c.disk_iops, c.scored) for c in load_grids(tmp_path)] == [(10, False), (20, False)]
    _write(tmp_path / "deaf.csv", [("8K", 9.0, 10, 10.0), ("128K", 10.0, 10, 10.0),
                                   ("8K", 18.0, 20, 20.0), ("128K", 19.0, 20, 20.0)])
    assert [(c.disk_iops, c.scored) for c in load_grids(tmp_path)] == [(10, True), (20, True)]


def test_the_fraction_of_the_best_and_harm_on_hand_made_rows(tmp_path):
    """8K at 9.0 and 9.2 tps, 128K at 10.0 and 10.2: the means differ (1.0) beyond the repeats' spread
    (0.2), so the cell ranks; 8K is 9.1 / 10.1 of the best."""
    _write(tmp_path / "g.csv", [("8K", 9.0, 10, 10.0), ("128K", 10.0, 10, 10.0),
                                ("128K", 10.2, 10, 10.0), ("8K", 9.2, 10, 10.0)])
    [cell] = load_grids(tmp_path)
    assert cell.scored and cell.ranks() and cell.best() == "128K"
    changed = score(cell, _answer("128K", "8K", "change"))
    assert changed.vs_best == pytest.approx(9.1 / 10.1) and changed.vs_current == pytest.approx(9.1 / 10.1)
    assert changed.interval[1] < 1 and changed.harm
    kept = score(cell, _answer("8K", "8K", "passed"))  # as bad a place, but the answer changed nothing
    assert kept.vs_best == pytest.approx(9.1 / 10.1) and not kept.harm
    better = score(cell, _answer("8K", "128K", "change"))
    assert better.vs_best == 1.0 and not better.harm
    unmeasured = score(cell, _answer("128K", "16K", "change"))
    assert unmeasured.vs_best is None and unmeasured.mean is None and not unmeasured.harm
    assert summary_line([cell], [changed, kept]) == "apps: 1 cells, 0 probes median 90.1 %, worst 90.1 %; " \
                                                   "2 probes worst -; harm 1"
    assert summary_line([cell], [changed, kept, unmeasured]).endswith(
        "harm 1; unmeasured 1 (answers at a recordsize the cell did not run)")  # never silently dropped


def test_a_lower_is_better_metric_scores_best_over_value(tmp_path):
    _write(tmp_path / "copy.csv", [("8K", 50.0, 10, 10.0), ("128K", 40.0, 10, 10.0),
                                   ("128K", 41.0, 10, 10.0), ("8K", 51.0, 10, 10.0)], metric="seconds", higher=0)
    [cell] = load_grids(tmp_path)
    assert cell.best() == "128K"
    r = score(cell, _answer("128K", "8K", "change"))
    assert r.vs_best == pytest.approx(40.5 / 50.5) and r.vs_current < 1 and r.harm


def test_a_cell_whose_repeats_spread_more_than_its_recordsizes_differ_harms_nothing(tmp_path):
    _write(tmp_path / "noisy.csv", [("8K", 7.0, 10, 10.0), ("128K", 10.0, 10, 10.0),
                                    ("128K", 11.0, 10, 10.0), ("8K", 12.0, 10, 10.0)])
    [cell] = load_grids(tmp_path)
    assert cell.scored and not cell.ranks()
    r = score(cell, _answer("128K", "8K", "change"))
    assert r.vs_best == pytest.approx(9.5 / 10.5) and not r.harm


def test_a_paced_cell_no_answer_can_be_scored_on_is_listed_with_why(tmp_path):
    rows = [("8K", 9.0, 10, 10.0), ("128K", 10.0, 10, 10.0)]
    _write(tmp_path / "a.csv", rows, app="rsync", metric="seconds", higher=0)
    _write(tmp_path / "d.csv", rows, app="borg", metric="seconds", higher=0)
    _write(tmp_path / "b.csv", rows, layout="hdd-stripe9")
    _write(tmp_path / "c.csv", rows)
    cells = load_grids(tmp_path)
    assert all(c.scored for c in cells)
    unanswerable(cells, samples(load_csv()), hosts={})
    why = {c.grid: c.why for c in cells if not c.scored}
    assert why["a"].startswith("no workload stands for rsync")
    assert why["d"].startswith("no fio cell of backup on ssd-mirror2x2")  # borg is a backup: none in the prior
    assert why["b"].startswith("no fio cell of postgres on hdd-stripe9")
    assert why["c"].startswith("no recorded host of ssd-mirror2x2")


def test_a_runs_readings_name_the_pool_disks_and_their_operations():
    run = GRIDS / "runs" / "pgbench-syncoff-ssd-mirror2x2-zfs2.3" / "pgbench-tpcb-8K-x0.005-c8-1.txt"
    before, after, report = parse_run(run.read_text())
    assert scsi_disks(before) == ["sda", "sdb", "sdc", "sdd"]  # not the root disk (vda), nor partitions
    assert "tps" in report
    ops = completed_ops(before, after, scsi_disks(before))
    assert set(ops) == {"sda", "sdb", "sdc", "sdd"} and all(o > 0 for o in ops.values())
    assert completed_ops(after, before, ["sda"]) == {}  # no time between them: nothing to divide by
    with pytest.raises(ValueError, match="@@SPLIT"):
        parse_run("@@STAT\ncpu  1 2 3 4 5 6 7 8 0 0\n")


def test_a_disks_share_of_its_throttle_is_the_larger_of_its_operations_and_its_bytes():
    """At 7 IOPS and 1 MB/s (the run's own throttle) its operations held the busiest disk; with a
    byte budget a hundredth of that, its bytes would have: the share is whichever is larger."""
    run = GRIDS / "runs" / "pgbench-syncoff-ssd-mirror2x2-zfs2.3" / "pgbench-tpcb-8K-x0.005-c8-1.txt"
    before, after, _ = parse_run(run.read_text())
    disks = scsi_disks(before)
    ops = completed_ops(before, after, disks)
    at_ops = throttle_shares(before, after, disks, 7, 1_000_000)
    assert at_ops == {d: pytest.approx(o / 7) for d, o in ops.items()}  # 8K requests: the count binds
    seconds = after.clock - before.clock
    moved = {d: (after.disks[d].sectors_read + after.disks[d].sectors_written - before.disks[d].sectors_read
                 - before.disks[d].sectors_written) * 512 / seconds for d in disks}
    at_bytes = throttle_shares(before, after, disks, 7, 10_000)
    assert at_bytes == {d: pytest.approx(max(ops[d] / 7, moved[d] / 10_000)) for d in disks}
    assert all(at_bytes[d] > at_ops[d] for d in disks)
    assert throttle_shares(after, before, disks, 7, 1_000_000) == {}


def test_the_cli_scores_the_committed_grids_and_ends_with_its_summary(capsys):
    pytest.importorskip("sklearn")
    from advisor.cli import main

    assert main(["evaluate", "--apps", "--shipped-fit"]) == 0
    out = capsys.readouterr().out.rstrip("\n").splitlines()
    match = LAST_LINE.fullmatch(out[-1])
    assert match, out[-1]
    assert main(["evaluate", "--apps", str(GRIDS), "--shipped-fit", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    scored = [c for c in report["cells"] if c["scored"]]
    assert int(match[1]) == len(scored) == report["summary"]["cells"] > 0
    assert int(match[5]) == sum(a["harm"] for a in report["answers"])
    assert int(match[6] or 0) == sum(a["vs_best"] is None for a in report["answers"])
    # every scored cell is answered at 0, 1 and 2 probes, for a new dataset and one at the workload's
    # common value (8K for PostgreSQL, 16K for MariaDB's InnoDB pages, 1M for the file server's copy)
    for c in scored:
        mine = [a for a in report["answers"] if a["cell"] == c["name"]]
        assert sorted((a["budget"], a["start"]) for a in mine) == sorted(
            (b, s) for b in (0, 1, 2) for s in ("common", "default"))
        common = "16K" if "mariadb" in c["name"] else "1M" if ": copy," in c["name"] else "8K"
        assert all(a["current"] == ("128K" if a["start"] == "default" else common) for a in mine)
    worst0 = min(a["vs_best"] for a in report["answers"] if a["budget"] == 0 and a["vs_best"] is not None)
    assert float(match[3]) == pytest.approx(100 * worst0, abs=0.05)


def test_the_cli_says_which_option_is_wrong(tmp_path, capsys):
    pytest.importorskip("sklearn")
    from advisor.cli import main

    assert main(["evaluate", "--apps", str(tmp_path / "none")]) == 2
    assert "--apps" in capsys.readouterr().err
    assert main(["evaluate", "--apps", "--budget", "0"]) == 2
    assert "--budget" in capsys.readouterr().err


def _with_wal(path: Path, wal: list[str]) -> None:
    rows = _rows(path)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*rows[0], "pg_wal"])
        w.writeheader()
        w.writerows({**row, "pg_wal": v} for row, v in zip(rows, wal, strict=True))


def test_a_wal_on_its_own_dataset_is_a_cell_of_its_own_and_says_so(tmp_path):
    """app-grid --pg-wal: the runs with PostgreSQL's WAL on a dataset of its own never share a cell
    with those beside their data, nor count as their twin at another throttle."""
    path = _write(tmp_path / "wal.csv", [("8K", 9.0, 10, 10.0), ("128K", 10.0, 10, 10.0),
                                         ("8K", 12.0, 10, 10.0), ("128K", 11.0, 10, 10.0)])
    _with_wal(path, ["same", "same", "separate", "separate"])
    same, separate = load_grids(tmp_path)
    assert [r.value for r in same.runs] == [9.0, 10.0] and [r.value for r in separate.runs] == [12.0, 11.0]
    assert separate.name.endswith(", WAL on its own dataset") and "WAL" not in same.name
    _write(path, [("8K", 9.0, 10, 10.0), ("128K", 10.0, 10, 10.0), ("8K", 18.0, 20, 20.0), ("128K", 10.0, 20, 20.0)])
    _with_wal(path, ["same", "same", "separate", "separate"])  # 128K deaf to the throttle, were they twins
    assert all(c.scored and "not run at another throttle" in c.why for c in load_grids(tmp_path))
