"""Exporter collectors on facts built by the real parsers from zpool/kstat text."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.exporters.base import ExportOptions, Scrape
from advisor.exporters.collector import COLLECTORS, MetricsRenderer
from advisor.exporters.histograms import buckets
from advisor.exporters.ioclass import latency_labels, queue_labels, size_labels
from advisor.exporters.params import metric_name
from advisor.host import zpool_iostat
from advisor.host.zpool_props import parse_zpool_get, pool_from_properties
from advisor.hostmodel.facts import Host, ZfsInfo
from support.hosts import LATENCY_ROWS, LATENCY_TEXT, SIZE_TEXT, make_host


def scrape_families(host: Host, **options) -> dict:
    text = MetricsRenderer().render(Scrape(host=host, options=ExportOptions(**options))).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(families: dict, name: str, **labels) -> dict:
    """{sample name: value} of a family's samples whose labels include `labels`."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for s in families[name].samples
        if labels.items() <= s.labels.items()
    }


def test_latency_histogram_is_cumulative_in_seconds_and_its_mean_is_zpool_iostat_l():
    hist = zpool_iostat.parse_latency_histograms(LATENCY_TEXT)["tank"]["tank"]
    points, total = buckets(hist, "total_wait_read")
    bounds = [b for b, _ in points]
    counts = [c for _, c in points]
    assert bounds[0] == "1.023e-06" and bounds[-1] == "+Inf"  # sub-microsecond buckets folded
    assert counts == sorted(counts) and counts[-1] == 2 + 10 + 5
    assert dict(points)["8.191e-06"] == 12 and dict(points)["4.095e-06"] == 2
    # zpool iostat -l prints single_histo_average(): sum(count * 1.5 * 2^i) // count, in ns
    raw = [row[0] for row in LATENCY_ROWS]
    zpool_average_ns = sum(c * ((1 << i) + ((1 << i) // 2)) for i, c in enumerate(raw)) // sum(raw)
    assert total / counts[-1] == pytest.approx(zpool_average_ns * 1e-9, abs=1e-9)  # zpool truncates to ns


def test_size_histogram_buckets_are_bytes_with_power_of_two_sums():
    hist = zpool_iostat.parse_size_histograms(SIZE_TEXT)["tank"]["tank"]
    points, total = buckets(hist, "ind_sync_read")
    assert points[0] == ("1023.0", 0) and dict(points)["8191.0"] == 3 and points[-1] == ("+Inf", 3)
    assert total == 3 * 4096  # 4 KiB requests land in [4096, 8191]


def test_pool_histograms_render_with_count_sum_and_labels():
    families = scrape_families(make_host())
    latency = samples(families, "zfs_pool_latency_seconds", pool="tank", queue="disk", op="write")
    count = next(v for (name, _), v in latency.items() if name.endswith("_count"))
    assert count == 10 + 3 + 5  # column 3 is disk_wait_write
    assert "zfs_vdev_latency_seconds" not in families  # per-vdev histograms are opt-in
    detailed = scrape_families(make_host(), per_vdev=True)
    assert "zfs_vdev_latency_seconds" not in detailed  # no -w rows for the vdevs here: no empty family
    assert samples(detailed, "zfs_vdev_queue_pending_ios", vdev="/dev/sda1")


def test_iostat_averages_since_import_are_not_exported_and_queue_columns_become_labels():
    families = scrape_families(make_host(), per_vdev=True)
    # zpool iostat without an interval averages since import: the histograms are the counters
    averaged = [name for name in families if name.endswith(("_per_second", "_average_latency_seconds"))]
    assert averaged == []
    pending = samples(families, "zfs_pool_queue_pending_ios", queue="trimq")
    assert list(pending.values()) == [2.0] and ("op", "trim") in next(iter(pending))[1]


def test_column_names_map_to_queue_and_op_labels():
    assert latency_labels("total_wait_read") == ("total", "read")
    assert latency_labels("asyncq_wait_write") == ("asyncq", "write")
    assert latency_labels("scrub_wait") == ("scrubq", "read")
    assert latency_labels("rebuild_wait") == ("rebuildq", "write")
    assert queue_labels("trimq_write_activ") == ("trimq", "trim", "activ")
    assert size_labels("agg_async_write") == ("aggregated", "asyncq", "write")
    with pytest.raises(ValueError):
        queue_labels("nonsense")


def test_pool_health_is_zfs_exporters_code_and_a_state_set_and_vdev_errors_are_counters():
    families = scrape_families(make_host())
    assert samples(families, "zfs_pool_health", pool="tank") == {("zfs_pool_health", (("pool", "tank"),)): 1.0}
    health = samples(families, "zfs_pool_health_state", pool="tank")
    assert sum(health.values()) == 1 and len(health) == 7
    assert health[("zfs_pool_health_state", (("pool", "tank"), ("state", "DEGRADED")))] == 1
    errors = samples(families, "zfs_vdev_errors", vdev="/dev/sda1", error="read")
    assert list(errors) == [("zfs_vdev_errors_total", (("error", "read"), ("pool", "tank"), ("vdev", "/dev/sda1")))]
    assert list(errors.values()) == [2.0]
    assert samples(families, "zfs_pool_data_errors", pool="tank") == {
        ("zfs_pool_data_errors", (("pool", "tank"),)): 0.0
    }


def _with_pool(host: Host, **update) -> Host:
    return host.model_copy(update={"pools": [host.pools[0].model_copy(update=update), *host.pools[1:]]})


def _current_state(host: Host, stale: bool = False) -> tuple[list[str], dict]:
    text = MetricsRenderer().render(Scrape(host=host, stale=stale)).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    states = [s.labels["state"] for s in families["zfs_pool_health_state"].samples
              if s.labels["pool"] == "tank" and s.value == 1]
    code = samples(families, "zfs_pool_health", pool="tank") if "zfs_pool_health" in families else {}
    return states, code


def test_pool_health_comes_from_the_state_kstat_which_says_suspended_while_zpool_output_is_old():
    # zpool's last output says DEGRADED; the kernel's state kstat, read at this scrape, says SUSPENDED
    host = _with_pool(make_host(), kstat_state="SUSPENDED")
    for stale in (False, True):
        states, code = _current_state(host, stale)
        assert states == ["SUSPENDED"]
        assert list(code.values()) == [6.0]  # zfs_exporter's code for SUSPENDED


def test_pool_health_is_unknown_when_zpool_output_is_overdue_and_there_is_no_state_kstat():
    host = _with_pool(make_host(), kstat_state=None)
    assert _current_state(host, stale=False) == (["DEGRADED"], {("zfs_pool_health", (("pool", "tank"),)): 1.0})
    states, code = _current_state(host, stale=True)
    assert states == ["UNKNOWN"]
    assert code == {}  # zfs_exporter has no code for it: no series rather than a wrong one


def test_txg_window_metrics():
    families = scrape_families(make_host())
    assert samples(families, "zfs_pool_txgs", pool="tank") == {("zfs_pool_txgs_total", (("pool", "tank"),)): 101.0}
    # the window's rates are two gauges' ratio: one txg and 4 MiB written in 5 s
    txgs = samples(families, "zfs_pool_txg_window_txgs", pool="tank")
    span = samples(families, "zfs_pool_txg_window_span_seconds", pool="tank")
    assert list(txgs.values()) == [2.0] and list(span.values()) == [pytest.approx(5)]
    written = samples(families, "zfs_pool_txg_window_written_bytes", pool="tank")
    assert list(written.values()) == [4194304.0]
    sync = samples(families, "zfs_pool_txg_window_max_phase_seconds", phase="sync")
    assert list(sync.values()) == [pytest.approx(0.5)]
    assert list(samples(families, "zfs_pool_txg_dirty_bytes").values()) == [65536.0]


def test_default_dataset_detail_stays_under_26_series_per_dataset():
    def per_dataset(**options) -> float:
        small = scrape_families(make_host(datasets=2), **options)
        large = scrape_families(make_host(datasets=12), **options)
        count = lambda fams: sum(len(f.samples) for f in fams.values() if not f.name.startswith("zfs_advisor"))
        return (count(large) - count(small)) / 10

    assert per_dataset() == 14  # quota 0 (none) is a series, as in zfs_exporter; unset reservations are not
    assert per_dataset(per_dataset=True) == 15  # + zil_commit_count


def test_include_and_exclude_regexes_select_pools_and_datasets():
    import re

    families = scrape_families(make_host(datasets=3), pool_exclude=re.compile("scratch"), dataset_include="tank/.*")
    pools = {s.labels["pool"] for f in families.values() for s in f.samples if "pool" in s.labels}
    assert pools == {"tank"}
    datasets = {s.labels["name"] for s in families["zfs_dataset_properties_info"].samples}
    assert datasets == {"tank/ds0", "tank/ds1"}


def test_disks_are_those_behind_pools_unless_all_disks():
    reads = scrape_families(make_host(), diskstats=True)["zfs_advisor_disk_reads_completed"]
    assert {s.labels["device"] for s in reads.samples} == {"sda", "sdb"}
    everything = scrape_families(make_host(), all_disks=True, diskstats=True)
    assert {s.labels["device"] for s in everything["zfs_advisor_disk_read_bytes"].samples} == {"sda", "sdb", "vda"}
    assert samples(everything, "zfs_advisor_disk_read_bytes", device="sda") == {
        ("zfs_advisor_disk_read_bytes_total", (("device", "sda"),)): 8 * 512.0
    }


def test_diskstats_are_off_by_default_and_what_only_zfs_knows_of_a_disk_stays():
    families = scrape_families(make_host())
    assert not [name for name in families if name.startswith("zfs_advisor_disk_") and families[name].type == "counter"]
    assert "zfs_advisor_disk_io_now" not in families
    assert {s.labels["device"] for s in families["zfs_advisor_disk_info"].samples} == {"sda", "sdb"}  # to join on
    assert samples(families, "zfs_advisor_disk_rotational", device="sda")
    from advisor.exporters import disks

    def names(**options) -> set[str]:
        return {f.name for f in disks.collect(Scrape(make_host(), ExportOptions(**options)))}

    assert names(diskstats=True) - names() == {name for _, name, _, _ in disks.STATS} and len(disks.STATS) == 17


def test_indexed_and_kind_fields_are_labels_of_one_family():
    from advisor.exporters.named import KStatFamilies, KStatSpec
    from advisor.hostmodel.facts import KStat

    spec = KStatSpec(prefix="zfs_x", path="/proc/x", gauges=r"order_\d+", split=((r"order_(?P<order>\d+)", "chunks"),))
    families = KStatFamilies(spec, ["pool"])
    families.add(KStat(values={"order_0": 3, "order_10": 4, "zil_commit_count": 5}), ["tank"])
    by_name = {f.name: f for f in families}
    assert set(by_name) == {"zfs_x_chunks", "zfs_x_zil_commit"}  # no index in a name, no _count_total
    assert by_name["zfs_x_chunks"].type == "gauge" and by_name["zfs_x_zil_commit"].type == "counter"
    assert [(s.labels, s.value) for s in by_name["zfs_x_chunks"].samples] == [
        ({"pool": "tank", "order": "0"}, 3), ({"pool": "tank", "order": "10"}, 4)]
    assert "Source: /proc/x order_<order>." in by_name["zfs_x_chunks"].documentation


def test_kstats_are_typed_and_module_parameters_in_base_units():
    families = scrape_families(make_host())
    assert families["zfs_arc_hits"].type == "counter"
    assert families["zfs_arc_size_bytes"].type == "gauge"
    assert families["zfs_arc_target_size_bytes"].samples[0].value == 8192
    assert families["zfs_dmu_tx_dirty_delay"].type == "counter"
    assert families["zfs_param_dirty_data_max_ratio"].samples[0].value == pytest.approx(0.1)
    assert families["zfs_param_txg_timeout_seconds"].samples[0].value == 5
    assert "zfs_param_vdev_scheduler" not in families  # not numeric, not in the list
    assert metric_name("zfs_vdev_queue_depth_pct", "percent") == "zfs_param_vdev_queue_depth_ratio"


def test_every_family_names_its_source_and_names_are_unique_across_collectors():
    host = make_host()
    seen: dict[str, str] = {}
    for name, collect in COLLECTORS.items():
        for family in collect(Scrape(host=host, options=ExportOptions(per_vdev=True, per_dataset=True))):
            assert family.name not in seen, f"{family.name} from {name} and {seen.get(family.name)}"
            seen[family.name] = name
            assert "Source:" in family.documentation, family.name
    assert len(seen) > 60


def test_a_failing_collector_costs_only_its_own_families():
    def broken(scrape):
        raise RuntimeError("boom")

    exporter = MetricsRenderer({"arc": COLLECTORS["arc"], "broken": broken})
    families = {f.name: f for f in text_string_to_metric_families(exporter.render(Scrape(host=make_host())).decode())}
    assert "zfs_arc_hits" in families
    success = {s.labels["collector"]: s.value for s in families["zfs_advisor_scrape_collector_success"].samples}
    assert success == {"arc": 1.0, "broken": 0.0}


def test_no_zfs_is_no_data_not_an_error():
    host = Host(collected_at=datetime.now(UTC), zfs=ZfsInfo(present=False, reason="no module"))
    families = scrape_families(host)
    assert all(name.startswith("zfs_advisor_") for name in families)
    success = families["zfs_advisor_scrape_collector_success"].samples
    assert {s.value for s in success} == {1.0}


def test_freeing_leaked_and_expandsize_are_zfs_exporters_families_and_a_dash_or_junk_has_no_series():
    rows = "".join(f"tank\t{p}\t{v}\t-\n" for p, v in
                   (("health", "ONLINE"), ("freeing", "4096"), ("leaked", "0"), ("expandsize", "-")))
    rows += "grow\thealth\tONLINE\t-\ngrow\texpandsize\t1073741824\t-\ngrow\tleaked\t12x\t-\n"
    errors: list[str] = []
    host = make_host()
    host.pools = [pool_from_properties(name, props, errors) for name, props in parse_zpool_get(rows).items()]
    assert errors == ["grow leaked: '12x' is not an integer of bytes"]  # zpool cannot print it: left out, said
    families = scrape_families(host)
    assert samples(families, "zfs_pool_freeing_bytes") == {("zfs_pool_freeing_bytes", (("pool", "tank"),)): 4096}
    assert samples(families, "zfs_pool_leaked_bytes") == {("zfs_pool_leaked_bytes", (("pool", "tank"),)): 0}
    assert samples(families, "zfs_pool_expand_size_bytes") == {
        ("zfs_pool_expand_size_bytes", (("pool", "grow"),)): 1073741824}
