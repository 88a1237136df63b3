"""The ARC sizing and L2ARC rules (rules/arc.yaml) on the recorded lab hosts and modified copies."""
from __future__ import annotations

import pytest

from advisor.engine.derived_arc import innodb_dedicated_share
from advisor.engine.loader import load_rulebook
from advisor.engine.service import TargetError, recommend
from advisor.hostmodel.facts import Host, Vdev
from support import RECORDING, recorded_snapshots, snapshot_id
from support.recorded import recorded_host

BOOK = load_rulebook()
SNAPSHOTS = recorded_snapshots()
GIB = 1 << 30
ARC_RULES = {"postgres": "arc-max-beside-shared-buffers", "mysql": "arc-max-beside-buffer-pool",
             "fileserver": "arc-max-fileserver"}


def verdict(host: Host, workload: str | None, rule: str, **params: str):
    recs = recommend(host, BOOK, workload, params=params or None).recommendations
    return next((r for r in recs if r.rule == rule), None)


def with_arc_max(host: Host, c_max: int) -> Host:
    # Modifies a recording: the ARC maximum in effect, as if zfs_arc_max had been set.
    host.arc.values["c_max"] = c_max
    host.module_params["zfs_arc_max"] = str(c_max)
    return host


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=snapshot_id)
def test_recorded_arc_maximum_is_each_versions_default(snap):
    # What the rules' text says about the defaults, checked on what the lab recorded.
    host = recorded_host(snap)
    mem, c_max = host.memory_bytes, host.arc.int("c_max")
    assert host.module_params["zfs_arc_max"] == "0"
    expected = max(mem * 5 // 8, mem - GIB) if host.zfs.version_tuple >= (2, 3) else mem // 2
    assert abs(c_max - expected) < 64 << 10  # MemTotal is read later than the module sized the ARC


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=snapshot_id)
def test_default_arc_beside_a_quarter_of_ram_for_shared_buffers_is_too_much_on_the_lab_hosts(snap):
    host = recorded_host(snap)  # 3.8G of RAM: 25% for PostgreSQL and 1G for the rest leave 1.8G
    rec = verdict(host, "postgres", "arc-max-beside-shared-buffers")
    assert rec.status == "change" and rec.kind == "warning" and rec.recommended == "1.8G"
    assert rec.apply == "echo 1879048192 > /sys/module/zfs/parameters/zfs_arc_max"
    assert "978.3M (25% of RAM, parameter cache_percent)" in rec.explanation


def test_a_capped_arc_beside_shared_buffers_passes():
    host = with_arc_max(recorded_host(RECORDING), GIB)
    rec = verdict(host, "postgres", "arc-max-beside-shared-buffers")
    assert rec.status == "passed" and rec.apply is None
    assert verdict(host, "postgres", "arc-max-beside-shared-buffers", cache_percent="40").status == "passed"


def test_the_application_cache_parameter_moves_the_cap():
    host = recorded_host(RECORDING)
    small = verdict(host, "postgres", "arc-max-beside-shared-buffers", cache_percent="10")
    large = verdict(host, "postgres", "arc-max-beside-shared-buffers", cache_percent="40")
    assert small.recommended == "2.4G" and large.recommended == "1.2G"


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=snapshot_id)
def test_innodb_buffer_pool_as_a_dedicated_server_sizes_it(snap):
    rec = verdict(recorded_host(snap), "mysql", "arc-max-beside-buffer-pool")
    assert rec.status == "change" and rec.recommended == "896M"
    assert "(50% of RAM, parameter cache_percent)" in rec.explanation  # 1 to 4 GB: half


def test_a_buffer_pool_too_large_for_the_host_meets_the_floor():
    rec = verdict(recorded_host(RECORDING), "mysql", "arc-max-beside-buffer-pool", cache_percent="80")
    assert rec.recommended == "64M" and "too large for this host" in rec.explanation


@pytest.mark.parametrize(("memory", "share"), [(512 << 20, 0.25), (GIB, 0.5), (4 * GIB, 0.5), (4 * GIB + 1, 0.75),
                                               (64 * GIB, 0.75)])
def test_innodb_dedicated_server_table(memory, share):
    assert innodb_dedicated_share(memory) == share


def test_cache_percent_is_validated_and_leaves_the_fio_job_alone():
    with pytest.raises(TargetError) as err:
        recommend(recorded_host(RECORDING), BOOK, "postgres", params={"cache_percent": "33"})
    assert err.value.status == 400 and "25" in err.value.valid
    for name in ("postgres", "mysql"):
        workload = BOOK.workloads[name]
        jobs = {workload.fio_job({"cache_percent": v}) for v in workload.parameters["cache_percent"].values}
        assert jobs == {workload.fio_job({})}


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=snapshot_id)
def test_a_file_server_with_the_default_arc_passes(snap):
    rec = verdict(recorded_host(snap), "fileserver", "arc-max-fileserver")
    assert rec.status == "passed" and float(rec.current.rstrip("%")) >= 50


def test_a_file_server_arc_capped_at_an_eighth_of_ram_is_a_warning():
    host = recorded_host(RECORDING)
    host = with_arc_max(host, host.memory_bytes // 8)
    rec = verdict(host, "fileserver", "arc-max-fileserver")
    assert rec.status == "change" and rec.current == "12%" and "file server" in rec.explanation


def test_arc_rules_speak_only_to_their_workloads():
    host = recorded_host(RECORDING)
    for workload in BOOK.workloads:
        for owner, rule in ARC_RULES.items():
            assert (verdict(host, workload, rule) is not None) == (workload == owner)


# --- L2ARC -----------------------------------------------------------------------------------


def with_cache_device(host: Host, hits: int | None, misses: int | None) -> Host:
    # Modifies a recording: a cache device added to tank and the arcstats L2ARC counters set
    # (None: arcstats not read at all).
    host.pools[0].root.children.append(Vdev(name="/dev/nvme0n1", type="disk", group="cache", path="/dev/nvme0n1"))
    if hits is None:
        host.arc = None
    else:
        host.arc.values.update(l2_hits=hits, l2_misses=misses, l2_hdr_size=48 << 20, l2_asize=20 * GIB)
    return host


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=snapshot_id)
@pytest.mark.parametrize("workload", [None, "postgres", "media"])
def test_no_l2arc_line_on_hosts_without_cache_devices(snap, workload):
    assert verdict(recorded_host(snap), workload, "l2arc-hit-ratio") is None


def test_an_l2arc_that_rarely_hits_is_a_warning_naming_its_memory():
    host = with_cache_device(recorded_host(RECORDING), hits=2_000, misses=198_000)
    rec = verdict(host, None, "l2arc-hit-ratio")  # the general answer has it too: it reads no workload fact
    assert rec.status == "change" and rec.current == "1%" and rec.kind == "warning"
    assert "48M now" in rec.explanation and "200000" in rec.explanation
    assert "zpool remove tank DEVICE" in rec.apply_note


def test_an_l2arc_that_answers_a_third_of_misses_passes():
    host = with_cache_device(recorded_host(RECORDING), hits=100_000, misses=200_000)
    assert verdict(host, "fileserver", "l2arc-hit-ratio").status == "passed"


def test_too_few_lookups_say_nothing_yet():
    host = with_cache_device(recorded_host(RECORDING), hits=0, misses=99_999)
    assert verdict(host, "fileserver", "l2arc-hit-ratio") is None


def test_a_cache_device_without_arcstats_is_skipped():
    rec = verdict(with_cache_device(recorded_host(RECORDING), None, None), "fileserver", "l2arc-hit-ratio")
    assert rec.status == "skipped" and "arc.l2_lookups" in rec.skipped_reason
