"""The scratch area refuses any dataset outside its own, before a command is built."""
from __future__ import annotations

import asyncio

import pytest

from advisor.probe.scratch import ScratchArea, ScratchError


class NoCommands:
    """Fails the test if a command is run: every call below must be refused before that."""

    async def run(self, argv, timeout=None):  # pragma: no cover - reaching it is the failure
        raise AssertionError(f"ran {argv}")


@pytest.mark.parametrize("dataset", ["tank/data", "tank", "tank/zfs-advisor-probeX/a", "other/zfs-advisor-probe/a"])
def test_no_change_outside_the_scratch_area(dataset):
    scratch = ScratchArea("tank", NoCommands())  # type: ignore[arg-type]  # a runner that fails any command it is given
    assert scratch.root.startswith("tank/")
    with pytest.raises(ScratchError, match="refusing"):
        asyncio.run(scratch.set_property(dataset, "primarycache", "all"))
    with pytest.raises(ScratchError, match="refusing"):
        asyncio.run(scratch.destroy(dataset))


def test_the_root_itself_keeps_its_properties():
    scratch = ScratchArea("tank", NoCommands())  # type: ignore[arg-type]  # a runner that fails any command it is given
    with pytest.raises(ScratchError, match="refusing"):
        asyncio.run(scratch.set_property(scratch.root, "primarycache", "all"))
