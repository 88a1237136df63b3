"""Planning a probe within a budget (ProbeService.plan reads only arcstats under its host root)."""
from __future__ import annotations

import pytest

from advisor.engine.loader import load_rulebook
from advisor.evidence.arc_cap import stored_bytes
from advisor.host.files import HostFiles
from advisor.probe.candidates import parse_candidate_spec
from advisor.probe.probe_plan import OVERHEAD_SECONDS, Budget
from advisor.probe.probe_service import PlanError, ProbeConfig, ProbeService, parse_budget


def _service(tmp_path, c_min: int, c_max: int, cache: str = "arc-cap") -> ProbeService:
    kstat = tmp_path / "root/proc/spl/kstat/zfs"
    kstat.mkdir(parents=True)
    (kstat / "arcstats").write_text(f"13 1 0x01 2 96 1 1\nname type data\nc_min 4 {c_min}\nc_max 4 {c_max}\n")
    return ProbeService(ProbeConfig(tmp_path / "state", cache=cache), load_rulebook(), files=HostFiles(tmp_path / "root"))


@pytest.fixture
def service(tmp_path):
    return _service(tmp_path, 128 << 20, 2 << 30)  # a 4 GiB host: c_min is all memory / 32


def test_default_plan_is_a_recordsize_grid_with_the_default_as_baseline(service):
    plan = service.plan("tank", "postgres", Budget(seconds=600))
    # the prior's grid (docs/prior.md), nearest the 8K page first
    assert [(c.value, c.baseline) for c in plan.candidates] == [
        ("128K", True), ("8K", False), ("16K", False), ("4K", False), ("32K", False), ("64K", False)]
    assert plan.repeats == 2 and plan.estimated_seconds <= 600
    assert plan.working_set_bytes == 4 * (256 << 20)  # 4 jobs x the 256M default file cap
    # with --cache arc-cap: a quarter of the working set as the compressed ARC stores it (50 %
    # compressible data: half), and the floor (c_min 128 MiB) lowered to stay below the cap
    assert (plan.arc_min_bytes, plan.arc_max_bytes) == (96 << 20, 128 << 20)
    assert not plan.notes and plan.changes_host
    assert plan.quota_bytes == 4 << 30 and plan.working_set_bytes * 4 <= plan.quota_bytes


def test_each_repeat_gets_a_fresh_layout_when_the_budget_has_room_for_it(service, tmp_path):
    roomy = service.plan("tank", "postgres", Budget(seconds=600))
    assert roomy.layout_per_repeat and len(roomy.candidates) == 6
    # a layout a repeat costs a dataset and a layout each: estimated, and within the budget
    layout = roomy.working_set_bytes / service.config.layout_bytes_per_second
    assert roomy.estimated_seconds == pytest.approx(
        6 * (2 * (OVERHEAD_SECONDS + layout) + 2 * (roomy.runtime_seconds + roomy.ramp_seconds)))
    assert roomy.estimated_seconds <= 600
    # too little room for a layout per repeat of the whole grid: the repeats share one, and the plan
    # says what that costs, rather than dropping candidates
    tight = service.plan("tank", "postgres", Budget(seconds=300))
    assert not tight.layout_per_repeat and len(tight.candidates) == 6 and not tight.dropped
    assert any("share one" in n for n in tight.notes)
    assert tight.estimated_seconds <= 300
    shared = ProbeService(ProbeConfig(tmp_path / "state2", layout_per_repeat=False), service.rulebook,
                          files=service.files).plan("tank", "postgres", Budget(seconds=600))
    assert not shared.layout_per_repeat and not shared.notes and shared.runtime_seconds > roomy.runtime_seconds


def test_small_budget_drops_candidates_and_says_which(service):
    plan = service.plan("tank", "postgres", Budget(seconds=150))
    assert plan.candidates[0].baseline and plan.dropped
    assert len(plan.candidates) + len(plan.dropped) == 6
    assert [c.value for c in plan.candidates[1:]] == ["8K", "16K", "4K", "32K", "64K"][:len(plan.candidates) - 1]
    with pytest.raises(PlanError, match="too small"):
        service.plan("tank", "postgres", Budget(seconds=20))


def test_files_shrink_to_a_quarter_of_the_space_budget(service):
    plan = service.plan("tank", "postgres", Budget(seconds=600, space_bytes=512 << 20))
    assert plan.working_set_bytes <= 128 << 20
    assert any("ARC cap" in n for n in plan.notes)  # the small working set is noted


def test_bad_requests(service):
    with pytest.raises(PlanError, match="valid"):
        service.plan("tank", "nope")
    with pytest.raises(ValueError):
        service.plan("tank;rm", "postgres")
    with pytest.raises(PlanError, match="baseline"):
        service.plan("tank", "postgres", candidates=[c for c in parse_candidate_spec("recordsize=8K,128K") if not c.baseline])
    assert parse_budget("5m") == 300 and parse_budget("90s") == 90 and parse_budget("1h") == 3600
    with pytest.raises(PlanError):
        parse_budget("soon")


def test_the_arc_floor_is_lowered_when_it_would_keep_the_cap_above_a_quarter_of_the_working_set(tmp_path):
    big = _service(tmp_path / "big", 2 << 30, 62 << 30)  # a 64 GiB host: c_min 2 GiB, above the 1 GiB working set
    plan = big.plan("tank", "postgres", Budget(seconds=600))
    assert plan.working_set_bytes == 1 << 30
    assert (plan.arc_min_bytes, plan.arc_max_bytes) == (96 << 20, 128 << 20)  # lowered only as far as needed
    assert not any("ARC cap" in n for n in plan.notes)
    roomy = _service(tmp_path / "roomy", 32 << 20, 2 << 30)  # c_min already at the lowest: left alone
    assert roomy.plan("tank", "postgres", Budget(seconds=600)).arc_min_bytes is None
    small = _service(tmp_path / "small", 128 << 20, 2 << 30)
    plan = small.plan("tank", "postgres", Budget(seconds=600, space_bytes=768 << 20))  # 192 MiB of files
    assert plan.working_set_bytes == 192 << 20
    # the floor as low as zfs(4) allows (32 MiB), the cap at the 64 MiB minimum: 96 MiB of
    # compressed working set is not 4 x that, and the plan says how much the ARC may hold
    assert (plan.arc_min_bytes, plan.arc_max_bytes) == (32 << 20, 64 << 20)
    assert any("up to 67% of it may be read from memory" in n for n in plan.notes), plan.notes


def test_the_arc_cap_follows_the_working_set_as_the_arc_stores_it():
    # the compressed ARC keeps 1 GiB of 50 % compressible data in about half as much
    assert stored_bytes(1 << 30, 50) == 512 << 20
    assert stored_bytes(1 << 30, 0) == 1 << 30  # incompressible: all of it
    assert stored_bytes(1 << 30, 100) == 1  # all zeros: next to nothing, never a division by 0


def test_by_default_the_arc_is_left_alone_and_the_scratch_dataset_kept_out_of_it(tmp_path):
    uncached = _service(tmp_path, 128 << 20, 2 << 30, cache="uncached")
    plan = uncached.plan("tank", "postgres", Budget(seconds=600))  # random 8K pages
    assert (plan.arc_min_bytes, plan.arc_max_bytes) == (None, None)
    assert (plan.layout_primarycache, plan.measure_primarycache) == ("metadata", "metadata")
    assert not plan.changes_host and not plan.notes
    # sequential reads keep the prefetcher: measured under "all", and the plan says what that costs
    backup = uncached.plan("tank", "backup", Budget(seconds=600))
    assert (backup.layout_primarycache, backup.measure_primarycache) == ("metadata", "all")
    assert any("primarycache=all" in n for n in backup.notes), backup.notes
    cached = _service(tmp_path / "cached", 128 << 20, 2 << 30, cache="cached").plan("tank", "postgres", Budget(seconds=600))
    assert (cached.arc_max_bytes, cached.layout_primarycache, cached.measure_primarycache) == (None, None, None)
    assert any("may come from memory" in n for n in cached.notes)


def test_a_module_parameter_candidate_changes_the_host(tmp_path):
    uncached = _service(tmp_path, 128 << 20, 2 << 30, cache="uncached")
    plan = uncached.plan("tank", "postgres", Budget(seconds=600),
                         candidates=parse_candidate_spec("zfs_txg_timeout=5,1"))
    assert plan.changes_host and plan.arc_max_bytes is None
