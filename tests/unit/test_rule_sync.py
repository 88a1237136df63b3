"""sync-not-disabled covers every workload whose profile relies on fsync, on the recorded lab hosts.

The lab's tank/logs is recorded with sync=disabled and tank/pg with the default (standard).
"""
from __future__ import annotations

import pytest

from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from support import recorded_snapshots, snapshot_id
from support.recorded import recorded_host

BOOK = load_rulebook()
SNAPSHOTS = recorded_snapshots("idle")
SYNCING = sorted(name for name, w in BOOK.workloads.items() if w.io.sync in ("light", "heavy"))
NOT_SYNCING = sorted(set(BOOK.workloads) - set(SYNCING))


def verdict(host, workload: str, dataset: str):
    recs = recommend(host, BOOK, workload, dataset=dataset).recommendations
    return next((r for r in recs if r.rule == "sync-not-disabled"), None)


def test_the_rule_speaks_to_the_profiles_that_sync_and_only_to_them():
    # A profile's io.sync decides who hears about sync=disabled (the rule selects by it), read from the book.
    rule = BOOK.rule("sync-not-disabled")
    assert rule is not None and SYNCING and NOT_SYNCING and "postgres" in SYNCING
    assert sorted(name for name, w in BOOK.workloads.items() if rule.selects(w)) == SYNCING


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=snapshot_id)
@pytest.mark.parametrize("workload", SYNCING)
def test_sync_disabled_is_flagged_with_what_a_power_loss_costs(snap, workload):
    host = recorded_host(snap)
    rec = verdict(host, workload, "tank/logs")
    assert rec.status == "change" and rec.current == "disabled" and rec.recommended == "standard"
    assert "loses the last seconds of writes" in rec.explanation
    assert f"zfs_txg_timeout={host.module_params['zfs_txg_timeout']}s" in rec.explanation
    assert rec.apply_argv == ["zfs", "set", "sync=standard", "tank/logs"]
    assert verdict(host, workload, "tank/pg").status == "passed"


@pytest.mark.parametrize("workload", NOT_SYNCING)
def test_workloads_that_do_not_wait_for_fsync_are_not_told(workload):
    assert verdict(recorded_host(SNAPSHOTS[0]), workload, "tank/logs") is None
