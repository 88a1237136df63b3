"""The planner's capacity against every pool the lab recorded (tests/fixtures/hosts/<version>/<layout>/idle):
`zpool get size` and `zfs get used,available` of the new pool, to the byte."""
from __future__ import annotations

from pathlib import Path

import pytest
from support import HOSTS
from support.labplan import lab_layouts, recorded_space

from advisor.layout.space import pool_space

LAYOUTS = lab_layouts()
RECORDINGS = sorted(p for p in Path(HOSTS).glob("*/*/idle") if p.parent.name in LAYOUTS)


def test_every_recorded_layout_is_checked():
    assert len(RECORDINGS) >= 16 and {p.parent.name for p in RECORDINGS} >= {
        "hdd-raidz2x6", "hdd-raidz1x4", "hdd-raidz1x5", "ssd-raidz1x4", "hdd-stripe5", "ssd-mirror2x2",
        "hdd-mirror2x2", "4kn-ashift9", "mixed-mirror-ssd-hdd", "near-full"}


@pytest.mark.parametrize("snapshot", RECORDINGS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_capacity_as_recorded(snapshot):
    lay = LAYOUTS[snapshot.parent.name]
    size, usable = recorded_space(snapshot)
    space = pool_space(lay.vdevs, lay.disk_bytes, lay.ashift, lay.logical_block_size)
    print(f"{snapshot.parent.parent.name} {lay.name}: size {space.raw_bytes} vs {size}, "
          f"usable {space.usable_bytes} vs {usable} ({(space.usable_bytes - usable) / usable:+.4%})")
    assert (space.raw_bytes, space.usable_bytes) == (size, usable)
