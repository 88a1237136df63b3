"""A sample of the shipped prior reproduces: PostgreSQL on the SSD mirror, recordsize 8K and 128K,
probed again the way tests/lab/prior-grid measured them (docs/prior.md): the effect of 8K against
the 128K baseline falls within the interval the stored repeats give, and the ranking holds.
OpenZFS 2.3 only (the data is of 2.3)."""
from __future__ import annotations

import statistics

import pytest

import prior_grid
from labparams import lab_params

pytestmark = pytest.mark.lab

CSV = prior_grid.DATA_DIR / "prior-zfs2.3.csv"
LAYOUT = "ssd-mirror2x2"
SAMPLE = ("8K", "128K")
# What is compared is the effect, 8K against the 128K baseline measured in the same run, not
# absolute IOPS: under TCG emulation on a shared 2-core host the absolute numbers follow the
# host's load (the same cell measured 3,448 / 1,829 IOPS on an idle host and 887 / 596 with a
# load average of 7, docs/prior.md), while the ratio within a run held (1.89x and 1.49x).  The
# effect's interval is the probe's own (advisor/probe/evidence.py): the worst and best pairing
# of the repeats, [min(8K) / max(128K), max(8K) / min(128K)].  Two repeats on one host do not
# span what another host gives: CI's host measured 2.38x [2.28, 2.48] against the stored 1.88x
# [1.68, 2.14] (faster emulation, 4,454 / 1,796 IOPS), the loaded host above 1.49x, and the slower
# 2-core host of 2026-11-26 3.76x [3.38, 4.19] against the stored 2.35x [2.26, 2.43] (1,225-1,312 /
# 313-363 IOPS, against 1,965-2,078 / 853-869) in a full lab tier, then 2.34x [2.22, 2.47] (885-894
# / 362-398 IOPS) alone an hour later: the size of the effect moves with the host and its load.
# So the new run's interval must overlap the stored one widened by HOST_FACTOR each way (the
# largest gap seen between a new interval and the stored one: 1.39x, in that full tier), and the
# ranking must hold where the stored repeats do not overlap: that ranking is what the model takes
# from the prior, whose local probes set the size of the effect.
HOST_FACTOR = 1.6


def _by_value(rows: list[dict]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in rows:
        if r["parameter"] == "recordsize" and r["value"] in SAMPLE:
            out.setdefault(str(r["value"]), []).append(float(r["iops"]))
    return out


@pytest.mark.parametrize("lab_vm", lab_params([LAYOUT], lines=["2.3"]), indirect=True, scope="session")
def test_a_sample_of_the_prior_reproduces(lab_vm):
    settings = prior_grid.Settings()
    cell = [r for r in prior_grid.read_rows(CSV) if r["layout"] == LAYOUT and r["workload"] == "postgres"
            and int(r["working_set_bytes"]) == settings.working_set]
    runs = {r["run_id"] for r in cell if r["parameter"] == "recordsize" and r["value"] == SAMPLE[0]}
    stored = _by_value([r for r in cell if r["run_id"] in runs])  # 8K and the baseline of its run
    assert set(stored) == set(SAMPLE), f"{CSV} lacks postgres on {LAYOUT}: run tests/lab/prior-grid"
    vm = lab_vm
    arc_min = vm.exec("awk '$1==\"c_min\"{print $3}' /proc/spl/kstat/zfs/arcstats", check=True).stdout.strip()
    try:
        facts = prior_grid.guest_facts(vm)  # lowers zfs_arc_min as the grid did
        output = prior_grid.probe_cell(vm, "postgres", settings, LAYOUT, recordsizes=SAMPLE, extra=())
    finally:
        # the effective floor the other lab tests expect (writing 0 would not restore it)
        vm.exec(f"echo {arc_min} > /sys/module/zfs/parameters/zfs_arc_min", check=True)
    assert output is not None and output["run"]["status"] == "completed", output and output["run"]
    fresh = _by_value(prior_grid.rows_of(output, zfs_version=facts["zfs_version"], layout=LAYOUT,
                                         profile=facts["profiles"]["postgres"], arc_min=facts["arc_c_min"],
                                         s=settings))
    old_lo, old_hi = _interval(stored)
    new_lo, new_hi = _interval(fresh)
    iops = {v: (statistics.fmean(stored[v]), statistics.fmean(fresh[v])) for v in SAMPLE}
    print(f"stored: {stored}; again: {fresh}\n"
          f"8K vs 128K: stored {iops['8K'][0] / iops['128K'][0]:.2f}x [{old_lo:.2f}, {old_hi:.2f}], "
          f"again {iops['8K'][1] / iops['128K'][1]:.2f}x [{new_lo:.2f}, {new_hi:.2f}]")
    assert new_lo <= old_hi * HOST_FACTOR and old_lo / HOST_FACTOR <= new_hi, \
        f"the effect moved by more than {HOST_FACTOR}x between hosts"
    if max(stored["128K"]) < min(stored["8K"]):
        assert iops["8K"][1] > iops["128K"][1]
    elif max(stored["8K"]) < min(stored["128K"]):
        assert iops["128K"][1] > iops["8K"][1]


def _interval(iops: dict[str, list[float]]) -> tuple[float, float]:
    return min(iops["8K"]) / max(iops["128K"]), max(iops["8K"]) / min(iops["128K"])
