"""Which runs of the fleet view are a pool's siblings, and a sibling that disagrees named
(advisor/fleet/view.py).  The runs are the lab's measurements of ssd-mirror2x2/postgres
(advisor/model/data/prior-zfs2.3.csv), repeat 1 and 2 as two siblings; the third sibling is the
same run with 8K measured at half: made up here, as a sibling whose pool is unlike the others."""
from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.fleet.series import SiblingRepeat, SiblingRun
from advisor.fleet.view import FleetView, is_own, siblings_for
from advisor.model.dataset import cells, load_csv, samples

CELL = "zfs2.3.2/ssd-mirror2x2/postgres/512M"
LABELS = {"media": "ssd", "vdev_type": "mirror", "top_vdevs": "2", "vdev_width": "2", "ashift": "12", "disks": "4",
          "disk_model": "QEMU HARDDISK", "openzfs": "2.3"}


@pytest.fixture(scope="module")
def lab():
    cell = [s for s in cells(samples(load_csv()))[CELL] if s.obs.parameter == "recordsize"]
    base = replace(next(s.obs for s in cell if s.obs.baseline), perf=None, write_p99=None)
    return cell, base


def _run(cell, repeat: int, instance: str, scale_8k: float = 1.0, **changed) -> SiblingRun:
    return SiblingRun(instance, "tank", changed.pop("workload", "postgres"), "recordsize", {**LABELS, **changed},
                      536870912, 67108864,
                      [SiblingRepeat(s.obs.value, 1, s.obs.perf * (scale_8k if s.obs.value == "8K" else 1.0), None,
                                     s.obs.write_p99) for s in cell if s.obs.repeat == repeat])


def test_siblings_are_the_same_descriptor_and_workload_on_other_instances(lab):
    cell, base = lab
    view = FleetView([_run(cell, 1, "a:1"), _run(cell, 2, "b:1"), _run(cell, 1, "me:1"),
                      _run(cell, 1, "c:1", disk_model="OTHER DISK"), _run(cell, 1, "d:1", openzfs="2.1"),
                      _run(cell, 1, "e:1", workload="mysql")], fetched_at=0.0)
    found = siblings_for(view, LABELS, "postgres", base, {"me"})
    assert found.pools == ["a:1 tank", "b:1 tank"]
    assert found.probes == 2 * len({s.obs.value for s in cell})
    assert {s.host for s in found.samples} == {"a:1 tank", "b:1 tank"} and not found.disagreeing
    assert is_own("me:1", {"me"}) and not is_own("meadow:1", {"me"})


def test_a_sibling_that_disagrees_is_named_not_averaged_away(lab):
    cell, base = lab
    view = FleetView([_run(cell, 1, "a:1"), _run(cell, 2, "b:1"), _run(cell, 1, "c:1", scale_8k=0.5)], fetched_at=0.0)
    found = siblings_for(view, LABELS, "postgres", base, set())
    assert len(found.disagreeing) == 1 and found.disagreeing[0].startswith("c:1 tank: recordsize=8K measured")
    assert "c:1 tank" in found.pools  # still read, through the between-host variance
