"""Which disks serve small random reads on a raidz, against advisor/layout/raidz_reads.py and the
planner's two random-read figures (docs/planner.md, "Which disks a raidz read reaches").

Every raidz allocation is a multiple of nparity + 1 sectors, so blocks start on a subset of the
disks: on a raidz3 of six on disks 0, 2 and 4 (counting from 0) in every metaslab, 4K records
read from disks 3, 5 and 1; on a raidz2 of six on two disks a metaslab, another two in the
next.  Each layout: 4K random reads of a new pool's data, then of data written after a 1 GiB file
(tests/lab/experiments/raidz-start-disks.sh), each disk's bytes read from /proc/diskstats.
The random-I/O efficiency probe on a new raidz2 of six must say where its reads came from.
A long lab job (a boot per layout, about 4 minutes each, and one for the probe): ZFS_ADVISOR_LAB_LONG=1."""
from __future__ import annotations

import csv
import io
import json

import pytest

from advisor.layout.layouts import Candidate
from advisor.layout.predict import LayoutPrediction, predict
from advisor.layout.raidz_reads import read_shares
from advisor.layout.space import Vdev
from labefficiency import RANDOM_PROBE
from labparams import long_jobs
from labvm import LabVM
from support.labplan import GRID_COLUMNS, disks_of, disks_that_read, lab_layouts

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(not long_jobs(), reason="a long lab job: set ZFS_ADVISOR_LAB_LONG=1 (docs/lab.md)")]

SCRIPT = "/project/tests/lab/experiments/raidz-start-disks.sh"


@pytest.fixture(scope="module")
def measured(_lab_machines):
    """layout -> (the new pool's row, the row after a 1 GiB file), run one VM at a time."""
    _lab_machines.stop()
    rows = {}
    for name in ("hdd-raidz3x6", "hdd-raidz2x6"):
        vm = LabVM("2.3", name)
        vm.start()
        try:
            out = vm.exec(f"LAYOUT={name} OUT=/tmp/reads.csv bash {SCRIPT} >&2 && cat /tmp/reads.csv", timeout=900)
            assert out.rc == 0, out.stderr
        finally:
            vm.stop()
        print(out.stdout, end="")  # the CSV rows (docs/planner.md's table is made of them)
        new, later = list(csv.DictReader(io.StringIO(out.stdout), fieldnames=GRID_COLUMNS))
        rows[name] = (new, later)
        print(f"{name}: new pool {new['fio_iops']} IOPS, by disk {new['disk_read_bytes_each']}; "
              f"after 1 GiB {later['fio_iops']} IOPS, by disk {later['disk_read_bytes_each']}")
    return rows


def _predicted(name: str) -> tuple[LayoutPrediction, Vdev]:
    lay = lab_layouts()[name]
    disks = disks_of(lay)
    assert disks is not None
    return predict(Candidate(tuple(lay.vdevs)), disks, 4096, 4096), lay.vdevs[0]


def test_raidz3_of_six_reads_small_records_from_three_disks_in_every_metaslab(measured):
    new, later = measured["hdd-raidz3x6"]
    pred, vdev = _predicted("hdd-raidz3x6")
    expected = [i for i, s in enumerate(read_shares(vdev.width, vdev.nparity, 12, 4096)) if s > 0]
    assert expected == [1, 3, 5]
    assert disks_that_read(new) == expected and disks_that_read(later) == expected
    assert pred.random_read_iops == pred.random_read_iops_one_metaslab == 450
    for row in (new, later):
        assert abs(pred.random_read_iops - float(row["fio_iops"])) <= 0.25 * float(row["fio_iops"])


def test_raidz2_of_six_reads_a_metaslabs_small_records_from_two_disks(measured):
    new, later = measured["hdd-raidz2x6"]
    pred, vdev = _predicted("hdd-raidz2x6")
    one = [i for i, s in enumerate(read_shares(vdev.width, vdev.nparity, 12, 4096, one_metaslab=True)) if s > 0]
    assert one == [2, 5]
    assert disks_that_read(new) == one  # the new pool's first metaslab
    # written after 1 GiB, the data lies in metaslabs whose blocks start on other disks
    assert set(disks_that_read(later)) - set(one)
    assert pred.random_read_iops_one_metaslab == 300 and pred.random_read_iops == 900
    assert abs(pred.random_read_iops_one_metaslab - float(new["fio_iops"])) <= 0.25 * float(new["fio_iops"])
    # over more metaslabs, more disks: between the one-metaslab figure and the whole pool's
    assert pred.random_read_iops_one_metaslab < float(later["fio_iops"]) <= pred.random_read_iops


def test_the_random_efficiency_probe_names_the_disks_a_new_raidz2_reads_from(_lab_machines):
    """`probe --efficiency random` on a new raidz2 of six: its scratch data lies in the first
    metaslab, so its 4K reads come from two disks at their raw rate. The report says so, and calls
    it disk bound on those two (2026-11-29: 301 IOPS, 33 % of the layout, the disks 151 a second,
    98 % of their raw reads). Its own boot (about 3 minutes)."""
    _lab_machines.stop()
    vm = LabVM("2.3", "hdd-raidz2x6")
    vm.start()
    try:
        out = vm.exec(RANDOM_PROBE, timeout=1800)
    finally:
        vm.stop()
    assert out.rc == 0, out.stderr
    report = json.loads(out.stdout)
    [read] = [r for r in report["random_results"] if r["test"] == "rand-read-4k"]
    print(read["measured"], read["expected"], read["diagnosis"])
    reached = [d for d in read["diagnosis"] if d.startswith("the reads came from")]
    assert reached and reached[0].startswith("the reads came from 2 of the 6 disks of a raidz2 of 6")
    assert "within a metaslab every block starts on one disk in 3" in reached[0]
    assert any(d.startswith("disk bound") for d in read["diagnosis"]), read["diagnosis"]
    assert read["ratio"] < 0.5
