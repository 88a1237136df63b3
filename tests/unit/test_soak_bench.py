"""tests/bench/soak.py's own parts: the unit's descriptor limit, when the source fails, and that
moving a recorded output away makes a running replay's source fail and recover (the soak's
failing source)."""
from __future__ import annotations

import shutil
import sys
from itertools import pairwise

from advisor.host.collect import collect
from advisor.host.snapshot import open_snapshot
from support import RECORDING, REPO

sys.path.insert(0, str(REPO / "tests" / "bench"))
import soak  # noqa: E402 - after the sys.path line above


def test_the_service_gets_the_units_limit_or_systemds_default(tmp_path):
    assert soak.unit_nofile() == (4096, "LimitNOFILE=4096 in deploy/systemd/zfs-advisor.service")
    unit = tmp_path / "x.service"
    unit.write_text("[Service]\nExecStart=/bin/true\n# LimitNOFILE=1\n")
    assert soak.unit_nofile(unit)[0] == 1024
    unit.write_text("[Service]\nLimitNOFILE=2048:524288\n")
    assert soak.unit_nofile(unit)[0] == 2048


def test_each_failure_leaves_time_to_see_its_recovery():
    hour = soak.failure_times(3600, 180, 45)
    assert len(hour) == 20 and hour[0] == (105, 150)
    assert all(back + soak.SEE_SECONDS <= later for (_, back), (later, _) in pairwise([*hour, (3600, 0)]))
    assert soak.failure_times(60, 180, 45) == [(10, 30)]  # a short run: one cycle, a third of it away
    assert soak.failure_times(30, 180, 45) == []


async def test_a_recorded_output_moved_away_fails_its_source_until_it_is_back(tmp_path):
    root = shutil.copytree(RECORDING, tmp_path / "snapshot")
    files, runner, manifest = open_snapshot(root)  # as the service opens it, once
    output = soak.recorded_output(root, soak.FAILING_COMMAND)
    away = output.with_name(output.name + ".away")

    async def up() -> bool:
        return (await collect(files, runner, now=manifest.created_at)).host.sources[soak.FAILING_SOURCE].ok

    assert await up()
    output.rename(away)
    assert not await up()
    away.rename(output)
    assert await up()
