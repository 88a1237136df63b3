"""advisor/layout/raidz_reads.py: the disks a raidz block starts on and which of them serve its
reads, against the allocation arithmetic (vdev_raidz_asize(), vdev_raidz_map_alloc()) and the
lab's per-disk reads (tests/lab/experiments/data/raidz-start-disks-2026-11-29.csv)."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from advisor.layout.layouts import Candidate
from advisor.layout.predict import DiskSpec, predict
from advisor.layout.raidz_reads import read_shares, start_disks
from advisor.layout.space import Vdev, raidz_asize
from support.labplan import GRID_COLUMNS, disks_that_read

DATA = Path(__file__).resolve().parents[1] / "lab/experiments/data/raidz-start-disks-2026-11-29.csv"


@pytest.mark.parametrize("width, nparity, one, pool", [
    (6, 2, [0, 3], [0, 1, 2, 3, 4, 5]),  # allocations of 3 sectors; metaslabs of 2^k sectors shift the class
    (9, 2, [0, 3, 6], list(range(9))),
    (6, 3, [0, 2, 4], [0, 2, 4]),  # allocations of 4 sectors: every metaslab starts on the same class
    (8, 3, [0, 4], [0, 4]),
    (4, 1, [0, 2], [0, 2]),
    (5, 1, [0, 1, 2, 3, 4], [0, 1, 2, 3, 4]),  # an odd width: every disk
    (5, 2, [0, 1, 2, 3, 4], [0, 1, 2, 3, 4]),
])
def test_blocks_start_on_the_disks_their_allocation_size_allows(width, nparity, one, pool):
    assert start_disks(width, nparity, one_metaslab=True) == one
    assert start_disks(width, nparity) == pool


@pytest.mark.parametrize("width, nparity", [(4, 1), (5, 1), (6, 2), (6, 3), (8, 3), (9, 2)])
@pytest.mark.parametrize("recordsize", [4096, 8192, 16384, 131072])
def test_every_allocation_is_a_multiple_of_parity_plus_one(width, nparity, recordsize):
    """The premise: vdev_raidz_asize() rounds up to nparity + 1 sectors, whatever the block."""
    assert (raidz_asize(recordsize, 12, width, nparity) >> 12) % (nparity + 1) == 0


@pytest.mark.parametrize("width, nparity, recordsize, columns", [(6, 2, 4096, 1), (6, 3, 4096, 1), (4, 1, 8192, 2),
                                                                  (6, 2, 131072, 4), (5, 1, 16384, 4)])
@pytest.mark.parametrize("one", [True, False])
def test_the_shares_add_up_to_a_records_data_columns(width, nparity, recordsize, columns, one):
    assert sum(read_shares(width, nparity, 12, recordsize, one)) == pytest.approx(columns)


def test_raidz1_swaps_its_parity_so_small_records_reach_every_disk():
    """raidz1 of four: blocks start on disks 0 and 2, and the parity/data swap every other MiB
    puts a 4K record's data on either of the two disks from there (the lab: 25 % each)."""
    assert read_shares(4, 1, 12, 4096, one_metaslab=True) == pytest.approx([0.25] * 4)
    assert read_shares(4, 1, 12, 8192, one_metaslab=True) == pytest.approx([0.75, 0.25, 0.75, 0.25])


def _lab_rows() -> dict[str, dict]:
    return {r["layout"]: r for r in csv.DictReader(DATA.read_text().splitlines())}


def _serving(width: int, nparity: int, one_metaslab: bool) -> list[int]:
    return [i for i, s in enumerate(read_shares(width, nparity, 12, 4096, one_metaslab)) if s > 0]


def test_the_lab_read_4k_records_from_the_disks_named():
    rows = _lab_rows()
    # a new pool's data lies in its first metaslab: the disks named for one metaslab, nothing else
    assert disks_that_read(rows["hdd-raidz2x6"]) == _serving(6, 2, True) == [2, 5]
    assert disks_that_read(rows["hdd-raidz3x6"]) == _serving(6, 3, True) == [1, 3, 5]
    # written after 1 GiB, in later metaslabs: a raidz2 of six reads it from other disks, a raidz3
    # of six from the same three (its metaslabs all start on the same class)
    assert set(disks_that_read(rows["hdd-raidz2x6+1G-first"])).isdisjoint([2, 5])
    assert disks_that_read(rows["hdd-raidz3x6+1G-first"]) == _serving(6, 3, False) == [1, 3, 5]


DISKS = DiskSpec(count=6, size_bytes=2 << 30, seq_read_bytes_per_second=150e6, seq_write_bytes_per_second=150e6,
                 random_read_iops=150, random_write_iops=150, ashift=12)


@pytest.mark.parametrize("vdevs, pool, one", [
    ((Vdev("raidz", 6, 2),), 900, 300),  # every disk over the pool, two in one metaslab
    ((Vdev("raidz", 6, 3),), 450, 450),  # three disks, everywhere
    ((Vdev("raidz", 4, 1),), 600, 600),
    # 3 sectors on 3 disks: in one metaslab every block starts on the same disk, its data on the third
    ((Vdev("raidz", 3, 2), Vdev("raidz", 3, 2)), 900, 300),
    ((Vdev("mirror", 2),) * 3, 900, 900),
])
def test_the_planner_gives_random_reads_over_the_pool_and_in_one_metaslab(vdevs, pool, one):
    p = predict(Candidate(vdevs), DISKS, 128 << 10, 4096)
    assert (p.random_read_iops, p.random_read_iops_one_metaslab) == pytest.approx((pool, one))


def test_the_lab_iops_are_within_a_quarter_of_the_planners_figure_for_where_the_data_lay():
    rows = _lab_rows()
    checks = {"hdd-raidz2x6": ((Vdev("raidz", 6, 2),), "one"), "hdd-raidz3x6": ((Vdev("raidz", 6, 3),), "pool"),
              "hdd-raidz3x6+1G-first": ((Vdev("raidz", 6, 3),), "pool")}
    for name, (vdevs, where) in checks.items():
        p = predict(Candidate(vdevs), DISKS, 128 << 10, 4096)
        predicted = p.random_read_iops_one_metaslab if where == "one" else p.random_read_iops
        measured = float(rows[name]["fio_iops"])
        assert abs(predicted - measured) <= 0.25 * measured, (name, predicted, measured)


def test_the_grid_columns_are_the_scripts_header():
    """support.labplan.GRID_COLUMNS, which the lab test reads the script's rows with, is the header
    tests/lab/planner-grid writes and the recorded CSV has."""
    driver = (DATA.parents[2] / "planner-grid").read_text()
    [header] = [line.split("=", 1)[1] for line in driver.splitlines() if line.startswith("header=")]
    assert header.split(",") == GRID_COLUMNS == DATA.read_text().splitlines()[0].split(",")
