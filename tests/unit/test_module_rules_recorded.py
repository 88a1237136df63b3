"""Module-parameter advice on the lab recordings (tests/fixtures/hosts): only changes the evidence supports."""
from __future__ import annotations

import asyncio
from functools import lru_cache
from pathlib import Path

import pytest
from support import recorded_snapshots, snapshot_id

from advisor.engine.loader import load_rulebook
from advisor.engine.service import recommend
from advisor.host.snapshot import collect_from_root

BOOK = load_rulebook()
ANSWERS = [None, *sorted(BOOK.workloads)]  # the general answer and every workload


@lru_cache(maxsize=None)
def host_of(path: Path):
    return asyncio.run(collect_from_root(path)).host


def module_advice(host, workload):
    return [r for r in recommend(host, BOOK, workload).recommendations if r.scope == "module"]


def all_nonrotating(host) -> bool:
    disks = [d for p in host.pools for d in host.pool_disks(p)]
    return bool(disks) and all(d.rotational is False for d in disks)


@pytest.mark.parametrize("snap", recorded_snapshots(), ids=snapshot_id)
def test_lba_weighting_is_never_advised_where_it_does_nothing(snap):
    # metaslab.c applies LBA weighting only `if (!vd->vdev_nonrot && metaslab_lba_weighting_enabled)`:
    # on non-rotating vdevs the parameter has no effect, so changing it there cannot gain anything.
    host = host_of(snap)
    if not all_nonrotating(host):
        pytest.skip("rotating disks: LBA weighting does act here")
    for workload in ANSWERS:
        assert not [r for r in module_advice(host, workload)
                    if r.parameter == "metaslab_lba_weighting_enabled" and r.status == "change"]
