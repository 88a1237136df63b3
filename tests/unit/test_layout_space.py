"""The planner's capacity arithmetic against hand-checked cases and published numbers."""
from __future__ import annotations

import pytest

from advisor.layout.space import (
    Vdev,
    data_capacity,
    deflate_ratio,
    draid_asize,
    leaf_asize,
    metaslab_shift,
    pool_space,
    raidz_asize,
)

K, GiB = 1024, 1 << 30


@pytest.mark.parametrize("width, nparity, psize, sectors", [
    # 128K at ashift 12 = 32 data sectors
    (6, 2, 128 * K, 48),  # 8 rows of 4 data + 2 parity: 16 parity, 48 is a multiple of 3: no padding (33 %)
    (4, 1, 128 * K, 44),  # ceil(32 / 3) = 11 parity, 43 rounded up to a multiple of 2 (27 %, not 25 %)
    (5, 1, 128 * K, 40),  # 8 rows of 4 + 1: 40 (20 %)
    (6, 2, 4 * K, 3),  # one data sector + 2 parity: as costly as a 3-way mirror
    (3, 1, 4 * K, 2),  # the OpenZFS RAIDZ page's example: raidz1 of 3, 4K: one data + one parity block
    (6, 2, 8 * K, 6),  # 2 data + 2 parity = 4, rounded up to 6 (a multiple of 3)
    (5, 3, 128 * K, 80),  # 2 data columns: 16 rows, 48 parity, 80 is a multiple of 4
])
def test_raidz_allocation(width, nparity, psize, sectors):
    assert raidz_asize(psize, 12, width, nparity) == sectors * 4096


def test_draid_rounds_every_block_to_whole_rows():
    # draid2 with 3 data disks: a 4K block takes a whole row of 3 + 2 sectors; 128K takes 11 rows
    assert draid_asize(4 * K, 12, 3, 2) == 5 * 4096
    assert draid_asize(128 * K, 12, 3, 2) == 11 * 5 * 4096


def test_a_2_gib_whole_disk_leaves_what_the_lab_recorded():
    # zdb -C of every lab pool (tests/fixtures/hosts/*/*/idle): asize 2132279296 per 2 GiB disk
    assert leaf_asize(2 * GiB) == 2132279296


def test_metaslabs_at_least_16_then_512_mib_then_about_200():
    assert metaslab_shift(2132279296) == 27  # recorded: metaslab_shift 27 on a 2 GiB mirror
    assert metaslab_shift(8529117184) == 29  # recorded: raidz1 of four 2 GiB disks
    assert metaslab_shift(24 * 10**12) == 37 - 3  # 34, the largest


def test_raidz2_of_six_lab_disks_as_recorded():
    space = pool_space([Vdev("raidz", 6, 2)], 2 * GiB, 12)
    assert space.raw_bytes == 12348030976  # zpool get size (2.3.2/hdd-raidz2x6)
    assert space.usable_bytes == 541330680 + 7425651464  # zfs get used + available of tank
    assert deflate_ratio(Vdev("raidz", 6, 2), 12) == 341  # 131072 / 384


def test_draid_as_published_in_openzfs_issue_15467():
    # draid2:6d:24c:0s of 1 TB devices, ashift 12: 1396 metaslabs of 16 GiB, zfs list USED + AVAIL
    # 15835678638080 (https://github.com/openzfs/zfs/issues/15467)
    space = pool_space([Vdev("draid", 24, 2, ndata=6, nspares=0)], 10**12, 12)
    assert space.usable_bytes == 15835678638080
    assert space.raw_bytes == 1396 * 16 * GiB  # zpool list SIZE: every metaslab, the ZIL's included
    assert space.embedded_log_bytes == 16 * GiB  # one metaslab of the 1396 holds the ZIL


def test_slop_is_a_32nd_at_least_128_mib_at_most_128_gib():
    small = pool_space([Vdev("mirror", 2)], 2 * GiB, 12)
    assert small.slop_bytes == 128 << 20  # a 32nd would be 60 MiB
    middle = pool_space([Vdev("mirror", 2)] * 2, 20 * 10**9, 12)
    # 37 metaslabs of 512 MiB per vdev: no embedded log (it takes one from 65 on), a 32nd
    assert middle.embedded_log_bytes == 0 and middle.slop_bytes == middle.raw_bytes >> 5
    large = pool_space([Vdev("mirror", 2)] * 4, 4 * 10**12, 12)
    # 1/32 is 462 GiB: capped at 128 GiB, then less the embedded log's 4 x 16 GiB, at most half
    assert large.embedded_log_bytes == 4 * 16 * GiB and large.slop_bytes == 64 * GiB


def test_small_records_on_raidz_hold_less_than_zfs_list_shows():
    vdevs = [Vdev("raidz", 6, 2)]
    space = pool_space(vdevs, 4 * 10**12, 12)
    at_128k = data_capacity(space, vdevs, 12, 128 * K)
    at_4k = data_capacity(space, vdevs, 12, 4 * K)
    assert abs(at_128k / space.usable_bytes - 1) < 0.002  # what zfs list assumes
    assert at_4k / space.usable_bytes == pytest.approx((1 / 3) / (4 / 6), rel=0.002)  # 4K costs 3 sectors
