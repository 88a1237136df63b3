"""The model's physical features (advisor/model/features.py): pure Python, no numpy."""
from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from advisor.model.dataset import prior_path
from advisor.model.features import FEATURES, busiest_disk_reads, disks_per_record, from_csv_row, vector


@pytest.mark.parametrize("vdev_type, width, ashift, recordsize, disks", [
    ("raidz1", 4, 12, 4 << 10, 1),     # one sector: one data disk (and its parity)
    ("raidz1", 4, 12, 8 << 10, 2),
    ("raidz1", 4, 12, 16 << 10, 3),    # every data disk from here on
    ("raidz1", 4, 12, 1 << 20, 3),
    ("raidz2", 6, 12, 16 << 10, 4),
    ("raidz2", 6, 12, 12 << 10, 3),    # a partial last sector is still a sector
    ("raidz3", 11, 9, 4 << 10, 8),     # 512-byte sectors: a 4K record spreads over 8 disks
    ("raidz1", 4, None, 8 << 10, 2),   # ashift unknown: 12, what ZFS picks for most disks today
    ("mirror", 2, 12, 1 << 20, 1),     # a mirror or a stripe keeps a record on one disk
    ("stripe", 1, 12, 1 << 20, 1),
])
def test_a_raidz_record_lies_on_as_many_data_disks_as_it_has_sectors(vdev_type, width, ashift, recordsize, disks):
    assert disks_per_record(vdev_type, width, ashift, recordsize) == disks


def _feature(layout: str, recordsize: str) -> float:
    with prior_path().open(encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["layout"] == layout and r["value"] == recordsize)
    return vector(from_csv_row(row))[FEATURES.index("log2_hdd_disks_per_record")]


def test_the_seek_feature_counts_disks_on_hdds_only():
    assert _feature("hdd-raidz1x4", "4K") == 0.0
    assert _feature("hdd-raidz1x4", "8K") == 1.0
    assert _feature("hdd-raidz1x4", "64K") == math.log2(3)
    assert _feature("hdd-mirror2x2", "64K") == 0.0
    assert _feature("ssd-raidz1x4", "64K") == 0.0  # an SSD does not seek


@pytest.mark.parametrize("vdev_type, width, vdevs, ashift, recordsize, block, reads", [
    ("raidz1", 4, 1, 12, 4 << 10, 8 << 10, 0.5),     # two 4K records, each on any of the 4 disks
    ("raidz1", 4, 1, 12, 8 << 10, 8 << 10, 0.75),    # one record, its data on disks 0 and 2 most often
    ("raidz1", 4, 1, 12, 128 << 10, 8 << 10, 0.75),  # three data columns out of four
    ("raidz1", 4, 1, None, 8 << 10, 8 << 10, 0.75),  # ashift unknown: 12
    ("raidz1", 4, 1, 12, 4 << 10, 4 << 10, 0.25),
    ("raidz1", 4, 2, 12, 8 << 10, 8 << 10, 0.375),   # two vdevs share the records
    ("raidz2", 6, 1, 12, 4 << 10, 8 << 10, 1.0),     # records start on disk 0 or 3: data on 2 or 5
    ("raidz2", 6, 1, 12, 8 << 10, 8 << 10, 0.5),
    ("raidz2", 6, 1, 12, 16 << 10, 8 << 10, 1.0),
    ("mirror", 2, 2, 12, 8 << 10, 8 << 10, 0.25),    # a mirror reads a record from one of its disks
    ("mirror", 2, 2, 12, 4 << 10, 8 << 10, 0.5),
    ("stripe", 1, 5, 12, 8 << 10, 8 << 10, 0.2),
])
def test_the_busiest_disk_serves_what_the_layout_puts_on_it(vdev_type, width, vdevs, ashift, recordsize, block, reads):
    assert busiest_disk_reads(vdev_type, width, vdevs, ashift, recordsize, block) == pytest.approx(reads)


# Reads per disk of the PostgreSQL data job (8K pages, 70 % reads) on the lab's raidz1 of four
# HDDs, recorded with tests/lab/experiments/raidz-reads-by-disk.sh (its header says how).
RECORDING = Path(__file__).parents[1] / "lab" / "experiments" / "data" / "raidz1x4-reads-by-disk-2026-11-26.txt"


def _reads_by_disk() -> dict[int, list[int]]:
    reads: dict[int, list[int]] = {}
    recordsize = None
    for line in RECORDING.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"rs=(\d+)K fio", line):
            recordsize = int(m[1]) << 10
            reads[recordsize] = []
        elif recordsize and (m := re.match(r"\s+sd\w+: reads (\d+)", line)):
            reads[recordsize].append(int(m[1]))
    return reads


@pytest.mark.parametrize("recordsize", [4 << 10, 8 << 10, 16 << 10, 128 << 10])
def test_the_busiest_disk_of_the_labs_raidz_served_the_predicted_share(recordsize):
    reads = _reads_by_disk()[recordsize]
    assert len(reads) == 4
    # disk reads per application read: one per data column of each record read
    per_read = max(1, (8 << 10) // recordsize) * disks_per_record("raidz1", 4, 12, recordsize)
    measured = max(reads) / sum(reads) * per_read
    assert busiest_disk_reads("raidz1", 4, 1, 12, recordsize, 8 << 10) == pytest.approx(measured, abs=0.06)


def _feature_of_lab_row(feature: str, layout: str, workload: str, recordsize: str) -> float:
    with prior_path().open(encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f)
                   if r["layout"] == layout and r["workload"] == workload and r["value"] == recordsize)
    return vector(from_csv_row(row))[FEATURES.index(feature)]


def test_the_balance_feature_compares_with_the_default_recordsize_on_hdds_only():
    def balance(layout: str, workload: str, recordsize: str) -> float:
        return _feature_of_lab_row("log2_hdd_busiest_disk_vs_default", layout, workload, recordsize)

    assert balance("hdd-raidz1x4", "postgres", "4K") == pytest.approx(math.log2(0.5 / 0.75))  # 4K spreads the reads
    assert balance("hdd-raidz1x4", "postgres", "8K") == 0.0
    assert balance("hdd-raidz2x6", "postgres", "8K") == -1.0
    assert balance("hdd-mirror2x2", "postgres", "4K") == 1.0  # two records, two reads
    assert balance("ssd-raidz1x4", "postgres", "4K") == 0.0  # an SSD does not seek


def test_the_seeks_against_the_default_are_zero_at_the_default_and_on_every_wide_record():
    """Model version 10's linear term: the disks one record lies on against the default 128K's on
    the same pool, so a raidz of any width has 0 from the record that fills its data disks on, and
    the term carries the geometry to widths the lab did not measure without a value beyond the lab's
    at the records that fill them."""
    def seeks(layout: str, workload: str, recordsize: str) -> float:
        return _feature_of_lab_row("log2_hdd_disks_per_record_vs_default", layout, workload, recordsize)

    assert seeks("hdd-raidz1x4", "postgres", "4K") == pytest.approx(math.log2(1 / 3))  # one disk of three
    assert seeks("hdd-raidz1x6", "postgres", "8K") == pytest.approx(math.log2(2 / 5))
    assert seeks("hdd-raidz1x6", "postgres", "32K") == 0.0  # 8 sectors: all five data disks
    assert seeks("hdd-raidz1x4", "postgres", "128K") == 0.0
    assert seeks("hdd-mirror2x2", "postgres", "4K") == 0.0  # a mirror keeps a record on one disk
    assert seeks("ssd-raidz1x4", "postgres", "4K") == 0.0  # an SSD does not seek


def test_an_ssd_pays_one_io_per_record_an_application_io_touches():
    def split(layout: str, workload: str, recordsize: str) -> float:
        return _feature_of_lab_row("log2_ssd_records_per_io", layout, workload, recordsize)

    assert split("ssd-mirror2x2", "postgres", "4K") == 1.0  # an 8K page in two records
    assert split("ssd-raidz1x4", "mysql", "4K") == 2.0  # a 16K page in four
    assert split("ssd-mirror2x2", "postgres", "8K") == 0.0
    assert split("ssd-mirror2x2", "postgres", "128K") == 0.0  # a larger record is still one I/O
    assert split("hdd-mirror2x2", "postgres", "4K") == 0.0  # the busiest-disk feature counts it on an HDD
