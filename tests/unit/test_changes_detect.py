"""What counts as a change (advisor/changes/detect.py) and how the sample ring stays bounded
(advisor/changes/samples.py), on the lab recording of OpenZFS 2.3.2 on ssd-mirror2x2.

The "after" hosts are copies of the recording with properties set in the test (support.recorded):
not recorded, derived, as each test says.
"""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from advisor.changes.detect import Change, detect, tracked, values
from advisor.changes.samples import Samples
from advisor.engine.loader import load_rulebook
from advisor.hostmodel.facts import Dataset, KStat, Property, SourceStatus
from support import HOSTS
from support.recorded import recorded_host, with_dataset_properties

LOAD = HOSTS / "2.3.2" / "ssd-mirror2x2" / "load"
WHAT = tracked(load_rulebook())


def test_the_tracked_settings_are_those_the_rules_name():
    assert {"recordsize", "compression", "logbias", "primarycache", "sync", "atime"} <= WHAT.dataset_properties
    assert {"zfs_dirty_data_max", "zfs_txg_timeout", "zfs_arc_max"} <= WHAT.module_params
    assert "used" not in WHAT.dataset_properties  # read by zfs get, named by no rule


def test_a_set_property_and_a_module_parameter_are_changes():
    before = recorded_host(LOAD)
    after = with_dataset_properties(recorded_host(LOAD), "tank/home", recordsize="16384")  # derived
    after.module_params = {**after.module_params, "zfs_dirty_data_max": "1073741824"}
    found = detect(values(before, WHAT), values(after, WHAT))
    assert found == [
        Change("module", "zfs_dirty_data_max", before.module_params["zfs_dirty_data_max"], "1073741824"),
        Change("dataset", "recordsize", "131072", "16384", "tank", "tank/home", "local"),
    ]


def test_an_inherited_change_is_one_change_of_the_dataset_it_was_set_on():
    """`zfs set compression=zstd tank`: tank's children that inherit it change too (derived copy)."""
    before = recorded_host(LOAD)
    after = with_dataset_properties(recorded_host(LOAD), "tank", compression="zstd")
    for ds in after.datasets:
        if ds.name != "tank" and ds.properties["compression"].source.startswith("inherited"):
            ds.properties = {**ds.properties, "compression": Property(value="zstd", source="inherited from tank")}
    assert [c.dataset for c in detect(values(before, WHAT), values(after, WHAT))] == ["tank"]


def test_no_change_is_read_from_a_failed_source_or_the_probes_scratch_datasets():
    before = recorded_host(LOAD)
    after = with_dataset_properties(recorded_host(LOAD), "tank/home", recordsize="16384")
    after.sources = {**after.sources, "zfs_get": SourceStatus(ok=False, reason="timed out; serving the last good")}
    assert detect(values(before, WHAT), values(after, WHAT)) == []
    scratch = Dataset(name="tank/zfs-advisor-probe/c1", type="filesystem",
                      properties={"recordsize": Property(value="8192", source="local")})
    before.datasets = [*before.datasets, scratch]
    moved = recorded_host(LOAD)
    moved.datasets = [*moved.datasets, scratch.model_copy(update={
        "properties": {"recordsize": Property(value="131072", source="local")}})]
    assert detect(values(before, WHAT), values(moved, WHAT)) == []


def test_an_idle_dataset_costs_one_entry_and_old_samples_go():
    host = recorded_host(LOAD)
    ring = Samples(horizon_seconds=60)
    start = datetime(2026, 11, 28, tzinfo=UTC)
    for i in range(20):
        h = host.model_copy()
        h.collected_at = start + timedelta(seconds=15 * i)
        pg = h.dataset("tank/pg")
        h.datasets = [d if d.name != "tank/pg" else d.model_copy(update={"io": KStat(values={
            **pg.io.values, "writes": pg.io.values["writes"] + 100 * i})}) for d in h.datasets]
        ring.add(h, h.collected_at.timestamp())
    assert len(ring.times) == 5  # 60 s at 15 s: the cut-off sample and four after it
    assert len(ring.datasets["tank/home"]) == 1 and len(ring.datasets["tank/pg"]) == 5
    points = ring.dataset_points("tank/home", list(ring.times))
    assert len(points) == 5 and len({c for _, c in points}) == 1  # its one entry, in force at every time
