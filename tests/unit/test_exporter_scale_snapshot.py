"""tests/bench/scale_snapshot.py: a recorded lab snapshot grows by N datasets that replay like recorded ones."""
from __future__ import annotations

import sys

import pytest

from advisor.host.snapshot import collect_from_root
from support import REPO, recorded_snapshots

sys.path.insert(0, str(REPO / "tests" / "bench"))
import scale_snapshot  # noqa: E402 - after the sys.path line above

SNAPSHOTS = recorded_snapshots("idle")


@pytest.mark.skipif(not SNAPSHOTS, reason="no recorded lab snapshot yet")
async def test_scaled_snapshot_replays_with_more_datasets(tmp_path):
    src = SNAPSHOTS[0]
    before = (await collect_from_root(src)).host
    scaled = scale_snapshot.scale(src, tmp_path / "scaled", 25)
    after = (await collect_from_root(scaled)).host
    parent = f"{before.pools[0].name}/scale"
    added = [d for d in after.datasets if d.name == parent or d.name.startswith(parent + "/")]
    assert len(after.datasets) == len(before.datasets) + 26  # the parent and 25 clones
    assert len(added) == 26 and all(d.io is not None for d in added[1:])
    assert after.pools[0].model_dump() == before.pools[0].model_dump()  # only datasets grow
