"""The model's physical features (advisor/model/features.py): pure Python, no numpy."""
from __future__ import annotations

import csv
import math

import pytest

from advisor.model.dataset import prior_path
from advisor.model.features import FEATURES, disks_per_record, from_csv_row, vector


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
